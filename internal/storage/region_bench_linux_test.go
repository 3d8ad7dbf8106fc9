package storage

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// BenchmarkSendRegion compares three ways of sending 1 MiB of a segment
// to a socket (the client reads and discards): sendfile(2) with an
// explicit offset (Region.SendTo, what the fetch path uses);
// (*net.TCPConn).ReadFrom on an io.SectionReader, which Go cannot turn
// into sendfile (a SectionReader is no *os.File) and so copies through a
// 32 KiB buffer; and pread into a pooled 1 MiB buffer then write.
func BenchmarkSendRegion(b *testing.B) {
	l := openLog(b, b.TempDir(), testConfig())
	for i := range 128 {
		mustAppend(b, l, makeBatch(b, 16, 1000, int64(i), "bench"), 0)
	}
	r, err := l.Read(0, 1<<20, -1)
	if err != nil {
		b.Fatal(err)
	}
	g, err := r.Pin()
	if err != nil {
		b.Fatal(err)
	}
	defer g.Release()
	pool := sync.Pool{New: func() any { return make([]byte, 1<<20) }}
	ways := []struct {
		name string
		send func(c *net.TCPConn) error
	}{
		{"sendfile", func(c *net.TCPConn) error {
			_, err := g.SendTo(c, 0, g.Size())
			return err
		}},
		{"readfrom-sectionreader", func(c *net.TCPConn) error {
			_, err := c.ReadFrom(io.NewSectionReader(g.f, g.pos, g.n))
			return err
		}},
		{"pooled-copy", func(c *net.TCPConn) error {
			buf := pool.Get().([]byte)
			defer pool.Put(buf)
			for off := int64(0); off < g.n; {
				n := min(int64(len(buf)), g.n-off)
				if _, err := g.f.ReadAt(buf[:n], g.pos+off); err != nil {
					return err
				}
				if _, err := c.Write(buf[:n]); err != nil {
					return err
				}
				off += n
			}
			return nil
		}},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			c := discardingConn(b)
			b.SetBytes(g.Size())
			b.ReportAllocs()
			before := cpuTime(b)
			for b.Loop() {
				if err := w.send(c); err != nil {
					b.Fatal(err)
				}
			}
			// The reader is another process: this is the sender's CPU.
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// discardingConn is a loopback TCP connection to a child process that
// reads and discards everything, so that the process's CPU time is the
// sender's alone.
func discardingConn(b *testing.B) *net.TCPConn {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 (the discarding reader) not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	const reader = `import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
buf = bytearray(1 << 20)
while s.recv_into(buf):
    pass
`
	cmd := exec.Command(py, "-c", reader, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		_ = cmd.Process.Kill()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		_ = cmd.Wait()
	})
	return c.(*net.TCPConn)
}
