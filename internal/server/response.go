package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeChunk is how much of a response is written between two updates of
// the write deadline.
const writeChunk = 1 << 20

// writeResponse frames and writes one response and flushes it, and
// returns the frame's size (as its size prefix says). The header
// is the correlation id, plus an empty tagged-field section for flexible
// responses (header v1) except ApiVersions, whose response header is
// always v0 so that a client can read it before knowing our versions.
//
// A RegionResponse (Fetch) goes out raw: its encoded bytes, with each
// region between them (see encodeRaw, writeRegionResponse); only the
// encoded bytes are in memory.
//
// The encoding buffer (and copied regions) are charged to the memory
// pool, without waiting, until written: the worker writes one response at
// a time and encodes the next only after, so a connection never holds
// more than one encoded response, and nothing queues behind a client
// that does not read. The write must keep to the transfer rule (or, with
// the rule off, finish within connections.max.idle.ms).
func (c *conn) writeResponse(bw *bufio.Writer, h header, resp kmsg.Response) (int, error) {
	if rr, ok := resp.(RegionResponse); ok {
		if fields := rr.Regions(); len(fields) > 0 {
			return c.writeRegionResponse(bw, h, resp, fields)
		}
	}
	buf := c.wbuf[:0]
	if hint := encodedSizeHint(resp); cap(buf) < hint {
		// Growing by append would copy a large fetch response several
		// times over (it showed as a fifth of the broker's CPU).
		buf = make([]byte, 0, hint)
	}
	buf, err := encodeResponse(buf, h, resp)
	if err != nil {
		return 0, err
	}
	size := frameSize(buf)
	charged := int64(cap(buf))
	c.pool.force(charged)
	defer c.pool.unforce(charged)
	w := c.newRespWriter(bw)
	if err := w.write(buf); err == nil {
		err = w.flush()
	}
	if err != nil {
		return 0, fmt.Errorf("write response to correlation id %d: %w", h.CorrelationID, err)
	}
	c.keepBuffer(buf)
	return size, nil
}

// frameSize is an encoded frame's size prefix: the bytes after it.
func frameSize(buf []byte) int { return int(binary.BigEndian.Uint32(buf)) }

// encodeResponse encodes a whole response frame into buf.
func encodeResponse(buf []byte, h header, resp kmsg.Response) ([]byte, error) {
	buf = appendHeader(buf[:0], h, resp)
	buf = resp.AppendTo(buf)
	if len(buf)-4 > math.MaxInt32 {
		return buf, fmt.Errorf("response to %s v%d is %d bytes, too large to frame",
			kmsg.NameForKey(h.APIKey), h.APIVersion, len(buf)-4)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf, nil
}

// keepBuffer keeps an encoding buffer for the next response unless it
// grew large.
func (c *conn) keepBuffer(buf []byte) {
	if cap(buf) <= keepBufferMax {
		c.wbuf = buf[:0]
	} else {
		c.wbuf = nil
	}
}

// writeRegionResponse writes a response carrying file regions: its
// encoded bytes with the regions between them, each sent with sendfile
// when they are large enough in all, or read through the connection's
// write buffer (one copy, no allocation) when small or when sendfile is
// off. Either way only the encoded bytes are charged to the pool. If the
// placeholders are not found, the regions are read into the response's
// fields (charged too) and it is written as any other.
func (c *conn) writeRegionResponse(bw *bufio.Writer, h header, resp kmsg.Response, fields []RegionField) (int, error) {
	var sum int64
	for _, f := range fields {
		sum += f.Region.Size()
	}
	buf, parts, ok, err := encodeRaw(c.wbuf, h, resp, fields, c.s.nonce)
	if err != nil {
		return 0, err
	}
	if ok {
		charged := int64(cap(buf))
		c.pool.force(charged)
		defer c.pool.unforce(charged)
		sendfile := c.s.cfg.rawFetch() && sum >= rawMinBytes
		// The size prefix counts the regions: read it before the
		// buffer is reused.
		size := frameSize(buf)
		if err := c.newRespWriter(bw).writeParts(parts, sendfile); err != nil {
			return 0, fmt.Errorf("write response to correlation id %d: %w", h.CorrelationID, err)
		}
		c.keepBuffer(buf)
		return size, nil
	}
	c.log.Warn("fetch response placeholders not found; copying its record sets into it",
		"api_key", h.APIKey, "api_version", h.APIVersion)
	charged := sum
	c.pool.force(charged)
	defer c.pool.unforce(charged)
	// The encoding buffer is sized for the record sets and a generous
	// guess at the rest, so that encoding copies them once.
	if need := int(sum) + 4096 + 128*len(fields); cap(c.wbuf) < need {
		c.wbuf = make([]byte, 0, need)
	}
	if _, err := fillRegions(fields, nil); err != nil {
		return 0, fmt.Errorf("response to correlation id %d: %w", h.CorrelationID, err)
	}
	return c.writeResponse(bw, h, withoutRegions{resp})
}

// withoutRegions hides a RegionResponse's regions once they are copied
// into its fields.
type withoutRegions struct{ kmsg.Response }

// respWriter writes one response, moving the write deadline on as the
// transfer rule allows.
type respWriter struct {
	c       *conn
	bw      *bufio.Writer
	start   time.Time
	written int64
}

func (c *conn) newRespWriter(bw *bufio.Writer) *respWriter {
	return &respWriter{c: c, bw: bw, start: time.Now()}
}

// deadline sets the write deadline for the next chunk.
func (w *respWriter) deadline() error {
	rule := w.c.s.frames.transfer
	var deadline time.Time
	switch idle := w.c.s.cfg.ConnectionsMaxIdle; {
	case rule.on():
		deadline = rule.deadline(w.start, 0, w.written)
	case idle > 0:
		deadline = time.Now().Add(idle)
	}
	if err := w.c.nc.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	return nil
}

// fail turns a deadline error into the transfer rule's.
func (w *respWriter) fail(err error) error {
	rule := w.c.s.frames.transfer
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && rule.on() {
		return fmt.Errorf("%w: %d bytes of a response written in %v (allowed %v plus 1s per %d bytes)",
			errTransferTooSlow, w.written, time.Since(w.start).Round(time.Millisecond), rule.grace, rule.rate)
	}
	return err
}

// write writes buf through the buffered writer in chunks.
func (w *respWriter) write(buf []byte) error {
	for len(buf) > 0 {
		if err := w.deadline(); err != nil {
			return err
		}
		n := min(len(buf), writeChunk)
		m, err := w.bw.Write(buf[:n])
		w.written += int64(m)
		if err != nil {
			return w.fail(err)
		}
		buf = buf[n:]
	}
	return nil
}

// flush writes out what the buffered writer holds.
func (w *respWriter) flush() error {
	if w.bw.Buffered() == 0 {
		return nil
	}
	if err := w.deadline(); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err)
	}
	return nil
}

// send writes a region straight to the socket (after what is buffered),
// in chunks.
func (w *respWriter) send(r FileRegion) error {
	if err := w.flush(); err != nil {
		return err
	}
	size := r.Size()
	for off := int64(0); off < size; {
		if err := w.deadline(); err != nil {
			return err
		}
		n := min(size-off, writeChunk)
		m, err := r.SendTo(w.c.nc, off, n)
		w.written += m
		off += m
		if err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// copyRegion reads a region into the buffered writer's free space,
// flushing it as it fills: one copy, through memory the connection has
// anyway.
func (w *respWriter) copyRegion(r FileRegion) error {
	size := r.Size()
	for off := int64(0); off < size; {
		if w.bw.Available() == 0 {
			if err := w.flush(); err != nil {
				return err
			}
		}
		p := w.bw.AvailableBuffer()
		p = p[:min(int64(cap(p)), size-off)]
		n, err := r.ReadAt(p, off)
		if n < len(p) {
			return fmt.Errorf("read %d bytes of a record set at %d: %w", len(p), off, err)
		}
		// p is the writer's own free space: this Write only counts it.
		_, _ = w.bw.Write(p)
		w.written += int64(n)
		off += int64(n)
	}
	return nil
}

// writeParts writes a raw response's parts in order and flushes; regions
// go with sendfile, or through the write buffer.
func (w *respWriter) writeParts(parts []rawPart, sendfile bool) error {
	for _, p := range parts {
		var err error
		switch {
		case p.r != nil && sendfile:
			err = w.send(p.r)
		case p.r != nil:
			err = w.copyRegion(p.r)
		default:
			err = w.write(p.b)
		}
		if err != nil {
			return err
		}
	}
	return w.flush()
}

// encodedSizeHint estimates a response's encoded size where it can be
// large: a fetch response is mostly its record batches.
func encodedSizeHint(resp kmsg.Response) int {
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for _, t := range fr.Topics {
		n += 32 + len(t.Topic)
		for _, p := range t.Partitions {
			n += 64 + len(p.RecordBatches) + 16*len(p.AbortedTransactions)
		}
	}
	return n
}
