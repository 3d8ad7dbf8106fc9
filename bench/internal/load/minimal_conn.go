package load

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The minimal client speaks Kafka's protocol on one connection per
// producer or consumer, with a fixed version of each request it sends
// (every broker the suite runs supports them) and nothing else a client
// library does: no metadata refresh, no retries, no buffering of records.
// It is the cheapest client that still does what a producer or consumer
// must, so a broker measured with it is bounded less by its client (see
// minimal.go).
const (
	minProduceVersion  = 9  // flexible, topics by name
	minFetchVersion    = 12 // flexible, topics by name (v13 names them by id)
	minInitPIDVersion  = 4
	minimalClientID    = "weir-bench-minimal"
	maxMinimalResponse = 256 << 20 // refuse a response frame larger than this
)

// minConn is one connection of the minimal client. Requests go out in
// order and their responses come back in the same order (Kafka answers
// one connection's requests in order), so the correlation id only checks
// that.
type minConn struct {
	c         net.Conn
	sent      int32 // correlation id of the last request written
	recvd     int32 // correlation id of the last response read
	rbuf      []byte
	headerBuf []byte
}

func dialMinimal(addr string) (*minConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("minimal client: %w", err)
	}
	return &minConn{c: c}, nil
}

func (m *minConn) Close() error { return m.c.Close() }

// header appends a request header (v2: flexible requests only) for req to
// dst, with the frame's size left as zero for frame to fill in.
func (m *minConn) header(dst []byte, req kmsg.Request) []byte {
	m.sent++
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(m.sent))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(minimalClientID)))
	dst = append(dst, minimalClientID...)
	return append(dst, 0) // no tagged fields
}

// frame sets the size of the frame that starts at b[0].
func frame(b []byte) { binary.BigEndian.PutUint32(b, uint32(len(b)-4)) }

// request writes req, encoded by kmsg.
func (m *minConn) request(req kmsg.Request) error {
	if !req.IsFlexible() {
		return fmt.Errorf("minimal client: %s v%d is not flexible", kmsg.NameForKey(req.Key()), req.GetVersion())
	}
	b := req.AppendTo(m.header(m.headerBuf[:0], req))
	frame(b)
	m.headerBuf = b
	return m.write(b)
}

func (m *minConn) write(b []byte) error {
	if _, err := m.c.Write(b); err != nil {
		return fmt.Errorf("minimal client: write: %w", err)
	}
	return nil
}

// response reads the next response into resp (its version set to the
// request's). The bytes resp keeps (record batches) are valid until the
// next response.
func (m *minConn) response(resp kmsg.Response) error {
	var err error
	m.rbuf, err = m.responseInto(resp, m.rbuf)
	return err
}

// responseInto is response reading into buf (grown if too small, and
// returned): a caller that alternates buffers can check one response
// while the next is read.
func (m *minConn) responseInto(resp kmsg.Response, buf []byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(m.c, size[:]); err != nil {
		return buf, fmt.Errorf("minimal client: read: %w", err)
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxMinimalResponse {
		return buf, fmt.Errorf("minimal client: response frame of %d bytes", n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	b := buf[:n]
	if _, err := io.ReadFull(m.c, b); err != nil {
		return buf, fmt.Errorf("minimal client: read: %w", err)
	}
	m.recvd++
	if corr := int32(binary.BigEndian.Uint32(b)); corr != m.recvd {
		return buf, fmt.Errorf("minimal client: response to request %d where %d was next", corr, m.recvd)
	}
	body, err := skipTags(b[4:])
	if err != nil {
		return buf, err
	}
	if err := resp.ReadFrom(body); err != nil {
		return buf, fmt.Errorf("minimal client: decode %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	return buf, nil
}

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortHeader
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errShortHeader
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errShortHeader
		}
		b = b[k+int(size):]
	}
	return b, nil
}

var errShortHeader = errors.New("minimal client: truncated response header")
