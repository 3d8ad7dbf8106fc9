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

// writeResponse frames and writes one response and flushes it. The header
// is the correlation id, plus an empty tagged-field section for flexible
// responses (header v1) except ApiVersions, whose response header is
// always v0 so that a client can read it before knowing our versions.
//
// The encoding buffer is charged to the memory pool, without waiting,
// until it is written: the worker writes one response at a time and
// encodes the next only after, so a connection never holds more than one
// encoded response, and nothing queues behind a client that does not
// read. The write must keep to the transfer rule (or, with the rule off,
// finish within connections.max.idle.ms).
func (c *conn) writeResponse(bw *bufio.Writer, h header, resp kmsg.Response) error {
	buf := c.wbuf[:0]
	if hint := encodedSizeHint(resp); cap(buf) < hint {
		// Growing by append would copy a large fetch response several
		// times over (it showed as a fifth of the broker's CPU).
		buf = make([]byte, 0, hint)
	}
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(h.CorrelationID))
	if resp.IsFlexible() && h.APIKey != apiVersionsKey {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	if len(buf)-4 > math.MaxInt32 {
		return fmt.Errorf("response to %s v%d is %d bytes, too large to frame",
			kmsg.NameForKey(h.APIKey), h.APIVersion, len(buf)-4)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	charged := int64(cap(buf))
	c.pool.force(charged)
	defer c.pool.unforce(charged)
	if err := c.writeAll(bw, buf); err != nil {
		return fmt.Errorf("write response to correlation id %d: %w", h.CorrelationID, err)
	}
	if cap(buf) <= keepBufferMax {
		c.wbuf = buf[:0]
	} else {
		c.wbuf = nil
	}
	return nil
}

// writeAll writes buf in chunks, moving the write deadline on as the
// transfer rule allows, and flushes.
func (c *conn) writeAll(bw *bufio.Writer, buf []byte) error {
	rule := c.s.frames.transfer
	start := time.Now()
	var written int64
	for len(buf) > 0 {
		var deadline time.Time
		switch idle := c.s.cfg.ConnectionsMaxIdle; {
		case rule.on():
			deadline = rule.deadline(start, 0, written)
		case idle > 0:
			deadline = time.Now().Add(idle)
		}
		if err := c.nc.SetWriteDeadline(deadline); err != nil {
			return fmt.Errorf("set write deadline: %w", err)
		}
		n := min(len(buf), writeChunk)
		m, err := bw.Write(buf[:n])
		written += int64(m)
		if err == nil && n == len(buf) {
			err = bw.Flush()
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && rule.on() {
				return fmt.Errorf("%w: %d bytes of a response written in %v (allowed %v plus 1s per %d bytes)",
					errTransferTooSlow, written, time.Since(start).Round(time.Millisecond), rule.grace, rule.rate)
			}
			return err
		}
		buf = buf[n:]
	}
	return nil
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
