package harness

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RawConn is a bare Kafka protocol connection for requests no
// well-behaved client sends (a topic named a thousand times, an exact
// version), with the size of each response. franz-go's own Request would
// split or merge some of them.
type RawConn struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

// maxRawResponse bounds the response a RawConn reads, so that a broker
// answering with hundreds of megabytes fails the test instead of the
// machine.
const maxRawResponse = 256 << 20

// Dial opens a RawConn to the broker, closed when the test ends.
func (b *Broker) Dial() *RawConn {
	b.t.Helper()
	nc, err := net.DialTimeout("tcp", b.Addr, 30*time.Second)
	if err != nil {
		b.t.Fatalf("dial %s: %v", b.Addr, err)
	}
	b.t.Cleanup(func() { nc.Close() })
	return &RawConn{t: b.t, nc: nc, br: bufio.NewReader(nc)}
}

// Request sends req at its set version and returns the decoded response
// and the size of its frame; any failure fails the test.
func (c *RawConn) Request(req kmsg.Request) (kmsg.Response, int) {
	c.t.Helper()
	resp, size, err := c.request(req)
	if err != nil {
		c.t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, size
}

// TryRequest is Request returning its failure, for a request the broker
// may not live to answer. Unlike Request it may be called from any
// goroutine.
func (c *RawConn) TryRequest(req kmsg.Request) (kmsg.Response, int, error) {
	return c.request(req)
}

func (c *RawConn) request(req kmsg.Request) (kmsg.Response, int, error) {
	c.corr++
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(c.corr))
	const clientID = "weir-raw"
	body = binary.BigEndian.AppendUint16(body, uint16(len(clientID)))
	body = append(body, clientID...)
	if req.IsFlexible() {
		body = append(body, 0) // request header v2: no tagged fields
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	if err := c.nc.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return nil, 0, err
	}
	if _, err := c.nc.Write(append(frame, body...)); err != nil {
		return nil, 0, fmt.Errorf("write: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, 0, fmt.Errorf("read size: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > maxRawResponse {
		return nil, 0, fmt.Errorf("response of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return nil, 0, fmt.Errorf("read body: %w", err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != c.corr {
		return nil, 0, fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	buf = buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Flexible responses have header v1 (tagged fields), except
	// ApiVersions, whose response header is never flexible.
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(buf) < 1 || buf[0] != 0 {
			return nil, 0, fmt.Errorf("response header tagged fields: want none")
		}
		buf = buf[1:]
	}
	if err := resp.ReadFrom(buf); err != nil {
		return nil, 0, fmt.Errorf("decode response: %w", err)
	}
	return resp, int(4 + n), nil
}
