package faults

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is a bare TCP connection to the broker for sending hand-made
// frames that no well-behaved client would send.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, opTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// write sends raw bytes, failing the test on error.
func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if err := c.nc.SetWriteDeadline(time.Now().Add(opTimeout)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write %d bytes: %v", len(b), err)
	}
}

// frame encodes req (at its set version) with request header v1, or v2
// for flexible versions, behind a 4-byte size prefix.
func frame(req kmsg.Request, corr int32) []byte {
	return frameBody(req.Key(), req.GetVersion(), req.IsFlexible(), corr, req.AppendTo(nil))
}

// frameBody frames an arbitrary body under a given key and version.
func frameBody(key, version int16, flexible bool, corr int32, body []byte) []byte {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	const clientID = "weir-faults"
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if flexible {
		b = append(b, 0) // header v2: no tagged fields
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// roundTrip sends req and decodes the matching response.
func (c *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.corr++
	c.write(frame(req, c.corr))
	body, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read %T v%d response: %v", req, req.GetVersion(), err)
	}
	if len(body) < 4 {
		c.t.Fatalf("response of %d bytes has no correlation id", len(body))
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != c.corr {
		c.t.Fatalf("correlation id %d, want %d", got, c.corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Response header v1 (flexible) adds tagged fields, except for
	// ApiVersions, whose response header is never flexible.
	if resp.IsFlexible() && req.Key() != 18 {
		if len(body) < 1 || body[0] != 0 {
			c.t.Fatalf("response header tagged fields: want an empty section, got % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return resp
}

// readFrame reads one size-prefixed response frame.
func (c *rawConn) readFrame() ([]byte, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(opTimeout)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, fmt.Errorf("size: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("implausible response size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, fmt.Errorf("body of %d bytes: %w", n, err)
	}
	return body, nil
}

// expectClosed fails unless the broker closes the connection, with no
// response sent first; a read timeout means the broker kept it open.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	if err := c.nc.SetReadDeadline(time.Now().Add(opTimeout)); err != nil {
		c.t.Fatal(err)
	}
	var buf [512]byte
	n, err := c.nc.Read(buf[:])
	switch {
	case n > 0:
		c.t.Fatalf("broker answered %d bytes (% x) instead of closing the connection", n, buf[:min(n, 32)])
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.t.Fatalf("broker kept the connection open for %s after bad input", opTimeout)
	case err == nil:
		c.t.Fatal("read returned no bytes and no error")
	}
	// io.EOF or a reset: the broker closed it.
}
