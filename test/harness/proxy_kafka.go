package harness

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Kafka-aware layer of Proxy: frames, hooks, decoding with kmsg.

// maxKafkaFrame is the largest size prefix taken for a Kafka frame;
// anything larger (or negative) is not Kafka, and the direction falls
// back to moving bytes as they come.
const maxKafkaFrame = 256 << 20

// chunker cuts a stream into the chunks the proxy forwards: whatever one
// read returns, or whole Kafka frames.
type chunker struct {
	r     *bufio.Reader
	kafka bool
	buf   []byte // read buffer for raw chunks
}

// next returns the next chunk, whether it is a whole Kafka frame, and
// the error that ended the stream (with any bytes read before it).
func (c *chunker) next() ([]byte, bool, error) {
	if !c.kafka {
		if c.buf == nil {
			c.buf = make([]byte, rawChunk)
		}
		n, err := c.r.Read(c.buf)
		// A copy of just what was read: a held chunk must not pin a
		// whole read buffer, maxHeld counts lengths.
		return bytes.Clone(c.buf[:n]), false, err
	}
	var size [4]byte
	if n, err := io.ReadFull(c.r, size[:]); err != nil {
		return size[:n], false, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxKafkaFrame {
		c.kafka = false
		return size[:], false, nil
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	got, err := io.ReadFull(c.r, frame[4:])
	if err != nil {
		return frame[:4+got], false, err
	}
	return frame, true, nil
}

// KafkaFrame is one Kafka request or response seen by a Kafka proxy.
type KafkaFrame struct {
	Conn int64     // the proxied connection, numbered from 1 in accept order
	Dir  Direction // ToTarget: a request; FromTarget: a response
	// Key and Version are the request's; for a response, those of the
	// request it answers (matched by correlation id). -1 when unknown.
	Key           kmsg.Key
	Version       int16
	CorrelationID int32
	Frame         []byte // size prefix included; the proxy forwards it: do not modify
}

// requestHeader is what a response needs of its request.
type requestHeader struct {
	key     kmsg.Key
	version int16
	corr    int32
}

// maxPending bounds the requests a connection remembers: requests that
// get no response (acks=0 produce) are forgotten when a later request's
// response arrives, or past this many.
const maxPending = 1024

// OnRequest sets the hook shown every request frame before the proxy
// forwards (or holds, or drops) it; nil removes it.
func (p *Proxy) OnRequest(fn func(KafkaFrame)) { p.setHook(&p.onRequest, fn) }

// OnResponse sets the hook shown every response frame before the proxy
// forwards (or holds, or drops) it: the hook may call Hold(FromTarget) to
// hold that very frame and all after it. Hooks run on the proxy's
// goroutines: concurrently for different connections, in order within
// one; a hook that blocks stalls its direction.
func (p *Proxy) OnResponse(fn func(KafkaFrame)) { p.setHook(&p.onResponse, fn) }

func (p *Proxy) setHook(h *func(KafkaFrame), fn func(KafkaFrame)) {
	if !p.kafka {
		panic("harness: Kafka hooks need a proxy from StartKafkaProxy")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	*h = fn
}

// inspect parses a frame's header, pairs responses with their requests,
// and shows the frame to the hook of its direction.
func (p *Proxy) inspect(pc *proxyConn, dir Direction, frame []byte) {
	f := KafkaFrame{Conn: pc.id, Dir: dir, Key: -1, Version: -1, CorrelationID: -1, Frame: frame}
	body := frame[4:]
	pc.pendingMu.Lock()
	switch {
	case dir == ToTarget && len(body) >= 8:
		f.Key = kmsg.Key(binary.BigEndian.Uint16(body))
		f.Version = int16(binary.BigEndian.Uint16(body[2:]))
		f.CorrelationID = int32(binary.BigEndian.Uint32(body[4:]))
		if len(pc.pending) == maxPending {
			pc.pending = pc.pending[1:]
		}
		pc.pending = append(pc.pending, requestHeader{f.Key, f.Version, f.CorrelationID})
	case dir == FromTarget && len(body) >= 4:
		f.CorrelationID = int32(binary.BigEndian.Uint32(body))
		// Responses come in request order: requests skipped over had none.
		for i, r := range pc.pending {
			if r.corr == f.CorrelationID {
				f.Key, f.Version = r.key, r.version
				pc.pending = pc.pending[i+1:]
				break
			}
		}
	}
	pc.pendingMu.Unlock()
	p.mu.Lock()
	hook := p.onRequest
	if dir == FromTarget {
		hook = p.onResponse
	}
	p.mu.Unlock()
	if hook != nil {
		hook(f)
	}
}

// Request decodes a request frame with kmsg.
func (f KafkaFrame) Request() (kmsg.Request, error) {
	req, body, err := f.split()
	if err != nil {
		return nil, err
	}
	r := kbin.Reader{Src: body[8:]}
	if !(f.Key == kmsg.ControlledShutdown && f.Version == 0) {
		r.NullableString() // client id
		if req.IsFlexible() {
			skipTags(&r)
		}
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%s v%d request header: %w", f.Key.Name(), f.Version, err)
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("%s v%d request: %w", f.Key.Name(), f.Version, err)
	}
	return req, nil
}

// Response decodes a response frame with kmsg, by the key and version of
// the request it answers.
func (f KafkaFrame) Response() (kmsg.Response, error) {
	req, body, err := f.split()
	if err != nil {
		return nil, err
	}
	r := kbin.Reader{Src: body[4:]}
	// Flexible responses have header v1 (tags), except ApiVersions,
	// whose response header stays v0 so any client can read it.
	if req.IsFlexible() && f.Key != kmsg.ApiVersions {
		skipTags(&r)
	}
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%s v%d response header: %w", f.Key.Name(), f.Version, err)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", f.Key.Name(), f.Version, err)
	}
	return resp, nil
}

// split returns an empty request of the frame's key and version, and the
// frame's body.
func (f KafkaFrame) split() (kmsg.Request, []byte, error) {
	req := kmsg.RequestForKey(int16(f.Key))
	if req == nil {
		return nil, nil, fmt.Errorf("frame of connection %d: unknown API key %d", f.Conn, f.Key)
	}
	req.SetVersion(f.Version)
	body := f.Frame[4:]
	if need := map[Direction]int{ToTarget: 8, FromTarget: 4}[f.Dir]; len(body) < need {
		return nil, nil, fmt.Errorf("%s frame of %d bytes: too short", f.Key.Name(), len(body))
	}
	return req, body, nil
}

// skipTags reads past a tagged-field section.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint() // tag
		r.Span(int(r.Uvarint()))
	}
}
