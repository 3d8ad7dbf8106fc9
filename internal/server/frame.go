package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// minChunk is the first allocation for a frame's body: small requests
	// fit in one, larger ones double from there as their bytes arrive.
	minChunk = 16 << 10
	// decodeFactor bounds what kmsg allocates to decode a request, per
	// frame byte, for APIs other than Produce. Measured with kmsg v1.15:
	// unknown tagged fields cost ~40x in allocations (~20x still live
	// after decoding), arrays of near-empty structs 8-21x, honest requests
	// about 2x. It is charged before decoding such a request, and the
	// charge is then lowered to what the decoded request really holds.
	decodeFactor = 32
)

var (
	// errTransferTooSlow: a request frame (or a response) fell behind the
	// transfer rule; the connection is closed.
	errTransferTooSlow = errors.New("transfer too slow")
	// errTooCostly: a request would take far more memory decoded than on
	// the wire, which no client's request does.
	errTooCostly = errors.New("request too costly to decode")
)

// transferRule is how long a frame may take to cross the socket: grace
// from its first byte, plus one second for every rate bytes moved so far.
// A client sending at rate or faster is never cut; one that trickles a few
// bytes now and then is cut about grace after its frame began, and it can
// never hold memory longer than grace plus what its bytes bought. The
// clock stops while the broker itself does not read (memory budget).
type transferRule struct {
	grace time.Duration // <= 0: no rule
	rate  int64         // bytes per second
}

func (t transferRule) on() bool { return t.grace > 0 && t.rate > 0 }

// deadline is when a transfer that started at start, was paused for paused
// and has moved n bytes must have moved its next byte.
func (t transferRule) deadline(start time.Time, paused time.Duration, n int64) time.Time {
	return start.Add(paused + t.grace + time.Duration(n*int64(time.Second)/t.rate))
}

// frameLimits are the per-frame limits.
type frameLimits struct {
	maxBytes      int32 // socket.request.max.bytes
	maxNonProduce int32 // frames of any other API
	transfer      transferRule
}

// frame is one request frame read off the socket.
type frame struct {
	buf []byte
	// fb holds buf's memory when it came from the pool (nil otherwise);
	// whoever is done with the frame last may put it back.
	fb *frameBuf
	// produceCost is, for a Produce request whose body was scanned, what
	// decoding it allocates; -1 for every other request.
	produceCost int64
	// checked is what the scan validated of a Produce's records.
	checked checkedRecords
}

// frameReader reads request frames from one connection. A frame's buffer
// grows with the bytes that actually arrived, each growth reserved from
// the memory pool first; a frame claiming more than the API may carry is
// refused once its API key is read, and a Produce body is scanned as it
// arrives, so that a request built to blow up in decoding is refused
// before it is read in full.
type frameReader struct {
	br       *bufio.Reader
	conn     net.Conn // for read deadlines; nil: none (fuzzing)
	limits   frameLimits
	versions *versionTable
	bufs     *frameBufs // where frame buffers come from; nil: allocate each

	// The frame being read.
	ctx context.Context
	res *reservation
	// buf is the frame read so far; its capacity is what is reserved
	// for it, while fb, its memory, may hold more.
	buf  []byte
	fb   *frameBuf
	size int
	// checked collects the ranges of records the Produce scan validated.
	checked []checkedRange
	start   time.Time
	paused  time.Duration
	moved   int64
}

// next reads one frame, charging its memory to res. A clean end of stream
// between frames is io.EOF.
func (f *frameReader) next(ctx context.Context, res *reservation) (frame, error) {
	f.ctx, f.res = ctx, res
	// A frame that failed left its buffer here; nothing refers to it.
	f.bufs.put(f.fb)
	f.buf, f.fb, f.size, f.paused, f.moved, f.checked = nil, nil, 0, 0, 0, nil
	// Between frames the connection may idle as long as
	// connections.max.idle.ms allows; the transfer rule starts with the
	// first byte of the next frame.
	if err := f.setDeadline(time.Time{}); err != nil {
		return frame{}, err
	}
	if _, err := f.br.Peek(1); err != nil {
		return frame{}, err
	}
	f.start = time.Now()
	var prefix [4]byte
	if err := f.setDeadline(f.nextDeadline()); err != nil {
		return frame{}, err
	}
	if _, err := io.ReadFull(f.br, prefix[:]); err != nil {
		return frame{}, f.readErr(err)
	}
	f.moved = 4
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size < 0 || size > f.limits.maxBytes {
		return frame{}, fmt.Errorf("%w: %d bytes, limit %d", errFrameSize, size, f.limits.maxBytes)
	}
	f.size = int(size)
	cost, err := f.inspect()
	if err != nil {
		return frame{}, err
	}
	if err := f.fill(f.size); err != nil {
		return frame{}, err
	}
	fm := frame{buf: f.buf, fb: f.fb, produceCost: cost,
		checked: checkedRecords{frame: f.buf, ranges: f.checked}}
	f.fb, f.checked = nil, nil // the frame's now
	return fm, nil
}

// inspect looks at the start of the frame as it arrives: it refuses a
// frame too large for its API and scans a Produce body, returning what
// decoding it will cost (-1 for other APIs).
func (f *frameReader) inspect() (int64, error) {
	if f.size < 4 {
		return -1, nil // too short for a header: parsing refuses it
	}
	if err := f.fill(4); err != nil {
		return -1, err
	}
	key := int16(binary.BigEndian.Uint16(f.buf))
	version := int16(binary.BigEndian.Uint16(f.buf[2:]))
	if key == kmsg.Produce.Int16() && f.versions.supports(key, version) {
		c := &cursor{f: f}
		return scanProduce(c, version, decodeLimit(f.size))
	}
	if f.size > int(f.limits.maxNonProduce) {
		return -1, fmt.Errorf("%w: %s request of %d bytes, limit %d for requests other than Produce",
			errFrameSize, kmsg.NameForKey(key), f.size, f.limits.maxNonProduce)
	}
	return -1, nil
}

// decodeLimit is the most a Produce request of size bytes may allocate in
// decoding: twice its size, and some slack for tiny requests. A real
// producer's request decodes to less than its size (record batches are
// not copied; each partition entry holds at least a batch header of 61
// bytes); only requests made of empty topic or partition entries or of
// unknown tagged fields go past it, 7x to 40x.
func decodeLimit(size int) int64 { return 2*int64(size) + 64<<10 }

// fill reads until the frame buffer holds upto bytes (upto <= size).
func (f *frameReader) fill(upto int) error {
	for len(f.buf) < upto {
		if len(f.buf) == cap(f.buf) {
			if err := f.grow(); err != nil {
				return err
			}
		}
		if err := f.setDeadline(f.nextDeadline()); err != nil {
			return err
		}
		n, err := f.br.Read(f.buf[len(f.buf):cap(f.buf)])
		f.buf = f.buf[:len(f.buf)+n]
		f.moved += int64(n)
		if err != nil && len(f.buf) < upto {
			return f.readErr(err)
		}
	}
	return nil
}

// grow doubles the frame buffer (at least minChunk, at most the frame),
// reserving the new bytes first; this may wait for the memory budget.
// The memory comes from the pool (see frameBufs): a buffer that already
// holds the new capacity is only extended, else the bytes so far move to
// a larger one and the outgrown one goes back.
func (f *frameReader) grow() error {
	newCap := min(max(2*cap(f.buf), minChunk, f.br.Buffered()), f.size)
	waited, err := f.res.grow(f.ctx, int64(newCap-cap(f.buf)))
	f.paused += waited
	if err != nil {
		return fmt.Errorf("wait for request memory: %w", err)
	}
	if f.fb == nil || cap(f.fb.b) < newCap {
		nb := f.bufs.get(newCap, f.size)
		copy(nb.b, f.buf)
		f.bufs.put(f.fb)
		f.fb = nb
	}
	f.buf = f.fb.b[:len(f.buf):newCap]
	return nil
}

// growCost reserves decoding memory for the frame just read.
func (f *frameReader) growCost(n int64) error {
	if _, err := f.res.grow(f.ctx, n); err != nil {
		return fmt.Errorf("wait for decoding memory: %w", err)
	}
	return nil
}

func (f *frameReader) nextDeadline() time.Time {
	if !f.limits.transfer.on() {
		return time.Time{}
	}
	return f.limits.transfer.deadline(f.start, f.paused, f.moved)
}

func (f *frameReader) setDeadline(t time.Time) error {
	if f.conn == nil {
		return nil
	}
	if err := f.conn.SetReadDeadline(t); err != nil {
		return fmt.Errorf("set read deadline: %w", err)
	}
	return nil
}

// readErr turns a read error inside a frame into what the reader reports.
func (f *frameReader) readErr(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w: %d of %d bytes of a request frame in %v (%s)", errTransferTooSlow,
			max(f.moved-4, 0), f.size, time.Since(f.start).Round(time.Millisecond), f.ruleText())
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read %d-byte frame: %w", f.size, err)
}

func (f *frameReader) ruleText() string {
	t := f.limits.transfer
	return fmt.Sprintf("allowed %v plus 1s per %d bytes", t.grace, t.rate)
}

// cursor walks a frame as it arrives, pulling bytes from the socket as it
// needs them.
type cursor struct {
	f   *frameReader
	pos int
}

var errShort = errors.New("not enough data")

// rem is how many bytes of the frame lie past the cursor, arrived or not.
func (c *cursor) rem() int { return c.f.size - c.pos }

// need makes sure the next n bytes are read (n <= rem).
func (c *cursor) need(n int) error {
	if n < 0 || n > c.rem() {
		return errShort
	}
	return c.f.fill(c.pos + n)
}

func (c *cursor) skip(n int) error {
	if err := c.need(n); err != nil {
		return err
	}
	c.pos += n
	return nil
}

func (c *cursor) int16() (int16, error) {
	if err := c.need(2); err != nil {
		return 0, err
	}
	v := int16(binary.BigEndian.Uint16(c.f.buf[c.pos:]))
	c.pos += 2
	return v, nil
}

func (c *cursor) int32() (int32, error) {
	if err := c.need(4); err != nil {
		return 0, err
	}
	v := int32(binary.BigEndian.Uint32(c.f.buf[c.pos:]))
	c.pos += 4
	return v, nil
}

// window reads up to n more bytes (fewer at the frame's end) and returns
// them without moving the cursor.
func (c *cursor) window(n int) ([]byte, error) {
	n = min(n, c.rem())
	if err := c.need(n); err != nil {
		return nil, err
	}
	return c.f.buf[c.pos : c.pos+n], nil
}
