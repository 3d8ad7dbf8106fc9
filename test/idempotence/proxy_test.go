package idempotence

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// responseDropper is a TCP proxy between producers and the broker that can
// swallow the broker's responses while still delivering requests: the
// broker appends batches whose acknowledgements never arrive, which is
// exactly the situation idempotence exists for. The broker advertises the
// proxy's address, so clients talk through it after bootstrap too.
type responseDropper struct {
	t       *testing.T
	ln      net.Listener
	backend atomic.Pointer[string]
	drop    atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newResponseDropper(t *testing.T) *responseDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &responseDropper{t: t, ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *responseDropper) Addr() string { return p.ln.Addr().String() }

// setBackend points the proxy at the broker's real listener.
func (p *responseDropper) setBackend(addr string) { p.backend.Store(&addr) }

func (p *responseDropper) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		addr := p.backend.Load()
		if addr == nil {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", *addr)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(s, c); s.Close() }()
		go func() { defer p.wg.Done(); p.copyResponses(c, s); c.Close() }()
	}
}

// copyResponses forwards the broker's bytes unless dropping.
func (p *responseDropper) copyResponses(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.drop.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut closes every proxied connection.
func (p *responseDropper) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// logEnd reads the partition's log end offset straight from the broker's
// segment files (page cache, as the broker wrote them).
func logEnd(t *testing.T, dir, topic string) int64 {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, topic+"-0", "*.log"))
	end := int64(0)
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			continue // rolled or removed under us
		}
		// A batch being written may be cut short: stop at it.
		for pos := 0; pos < len(data); {
			h, err := recordbatch.ParseHeader(data[pos:])
			if err != nil || h.Size() > int64(len(data)-pos) {
				break
			}
			end = max(end, h.LastOffset()+1)
			pos += int(h.Size())
		}
	}
	return end
}
