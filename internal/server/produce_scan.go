package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// A Produce request is the one request whose frames are legitimately huge
// (up to socket.request.max.bytes), so the blanket cap on other APIs'
// frames cannot apply to it, and kmsg's decoding can amplify any frame:
// each unknown tagged field becomes a map entry (~80 bytes live for ~5
// wire bytes, twice that allocated), and every array allocates its count
// of structs up front (64 bytes per topic entry of 3 wire bytes). kmsg has
// no hook to limit that. So, before decoding, a Produce body is walked
// here: nothing is decoded into structs, the walk only checks lengths as
// kmsg reads them and adds up what decoding will allocate. The walk
// mirrors kmsg v1.15.1's ProduceRequest.ReadFrom (versions 0-13); the
// fuzz target FuzzScanProduce holds it to kmsg's answers. On its way it
// validates each record batch as it arrives (produceScan.records), which
// the append then need not do again.

// Memory that decoding a Produce request allocates per element.
const (
	produceTopicCost     = int64(unsafe.Sizeof(kmsg.ProduceRequestTopic{}))
	producePartitionCost = int64(unsafe.Sizeof(kmsg.ProduceRequestTopicPartition{}))
	// checkedRangeCost is charged per partition: the note of what the
	// scan validated in its records, kept with the request.
	checkedRangeCost = int64(unsafe.Sizeof(checkedRange{}))
	// tagCost is charged per tagged field kmsg keeps in a map: measured
	// ~80 bytes live and ~200 allocated while the map grows.
	tagCost = 160
)

// scanProduce walks the request header and the Produce body of the given
// version, pulling the frame's bytes as it goes, and returns what decoding
// the body will allocate. It fails with errMalformedHeader or
// errMalformedBody where parsing would, and with errTooCostly as soon as
// the cost passes limit.
func scanProduce(c *cursor, version int16, limit int64) (int64, error) {
	flexible := version >= 9
	if err := scanHeader(c, flexible); err != nil {
		if errors.Is(err, errShort) || errors.Is(err, errBadVarint) {
			return -1, fmt.Errorf("%w: Produce v%d: %v", errMalformedHeader, version, err)
		}
		return -1, err
	}
	s := produceScan{c: c, flexible: flexible, limit: limit}
	if err := s.body(version); err != nil {
		if errors.Is(err, errShort) || errors.Is(err, errBadVarint) {
			return -1, fmt.Errorf("%w: Produce v%d: %v", errMalformedBody, version, err)
		}
		if errors.Is(err, errTooCostly) {
			return -1, fmt.Errorf("%w: Produce v%d of %d bytes would allocate more than %d bytes decoded",
				err, version, c.f.size, limit)
		}
		return -1, err
	}
	return s.cost, nil
}

var errBadVarint = errors.New("bad varint")

// scanHeader skips request header v1 (v2 when flexible) as parseHeaderV1
// and skipTaggedFields read it.
func scanHeader(c *cursor, flexible bool) error {
	if err := c.skip(8); err != nil { // key, version, correlation id
		return err
	}
	n, err := c.int16()
	if err != nil {
		return err
	}
	switch {
	case n == -1:
	case n < 0:
		return fmt.Errorf("client id length %d", n)
	default:
		if err := c.skip(int(n)); err != nil {
			return err
		}
	}
	if !flexible {
		return nil
	}
	count, err := c.headerUvarint()
	if err != nil {
		return err
	}
	for i := uint32(0); i < count; i++ {
		if _, err := c.headerUvarint(); err != nil {
			return err
		}
		size, err := c.headerUvarint()
		if err != nil {
			return err
		}
		if uint64(size) > uint64(c.rem()) {
			return errShort
		}
		if err := c.skip(int(size)); err != nil {
			return err
		}
	}
	return nil
}

// headerUvarint reads a uvarint as readUvarint32 does (encoding/binary,
// then a 32-bit check).
func (c *cursor) headerUvarint() (uint32, error) {
	b, err := c.window(binary.MaxVarintLen64)
	if err != nil {
		return 0, err
	}
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, errShort
	case n < 0 || v > math.MaxUint32:
		return 0, errBadVarint
	}
	c.pos += n
	return uint32(v), nil
}

// uvarint reads a uvarint as kmsg does: at most 5 bytes, the fifth at
// most 0x0f.
func (c *cursor) uvarint() (uint32, error) {
	b, err := c.window(5)
	if err != nil {
		return 0, err
	}
	var x uint32
	for i, v := range b {
		if i == 4 {
			if v > 0x0f {
				return 0, errBadVarint
			}
			c.pos += 5
			return x | uint32(v)<<28, nil
		}
		x |= uint32(v&0x7f) << (7 * i)
		if v < 0x80 {
			c.pos += i + 1
			return x, nil
		}
	}
	return 0, errShort
}

// produceScan walks one Produce body.
type produceScan struct {
	c        *cursor
	flexible bool
	limit    int64
	cost     int64
	// partsLeft counts the partitions of the topic being walked from
	// the current one on.
	partsLeft int
}

func (s *produceScan) add(n int64) error {
	s.cost += n
	if s.cost > s.limit {
		return errTooCostly
	}
	return nil
}

func (s *produceScan) body(version int16) error {
	c := s.c
	if version >= 3 {
		l, err := s.stringLen()
		if err != nil {
			return err
		}
		if l >= 0 { // a *string: its header and its bytes
			if err := c.skip(l); err != nil {
				return err
			}
			if err := s.add(16 + int64(l)); err != nil {
				return err
			}
		}
	}
	if err := c.skip(2 + 4); err != nil { // acks, timeout
		return err
	}
	topics, err := s.arrayLen()
	if err != nil {
		return err
	}
	if int64(topics)*2 > int64(c.rem()) || version >= 13 && int64(topics)*18 > int64(c.rem()) {
		return errShort
	}
	if err := s.add(int64(max(topics, 0)) * produceTopicCost); err != nil {
		return err
	}
	for range max(topics, 0) {
		if err := s.topic(version); err != nil {
			return err
		}
	}
	return s.tags()
}

func (s *produceScan) topic(version int16) error {
	c := s.c
	if version <= 12 {
		l, err := s.stringLen()
		if err != nil {
			return err
		}
		if l < 0 {
			return errShort // not nullable: kmsg's Span(-1) fails
		}
		if err := c.skip(l); err != nil {
			return err
		}
		if err := s.add(int64(l)); err != nil {
			return err
		}
	} else if err := c.skip(16); err != nil { // topic id
		return err
	}
	parts, err := s.arrayLen()
	if err != nil {
		return err
	}
	if int64(parts)*6 > int64(c.rem()) {
		return errShort
	}
	if err := s.add(int64(max(parts, 0)) * (producePartitionCost + checkedRangeCost)); err != nil {
		return err
	}
	for i := range max(parts, 0) {
		s.partsLeft = int(parts - i)
		if err := c.skip(4); err != nil { // partition
			return err
		}
		l, err := s.bytesLen()
		if err != nil {
			return err
		}
		if l >= 0 { // records alias the frame: nothing allocated
			if err := s.records(l); err != nil {
				return err
			}
		}
		if err := s.tags(); err != nil {
			return err
		}
	}
	return s.tags()
}

// records reads one partition's records of l bytes, validating each
// batch as soon as it has arrived, while its bytes are still in the CPU
// caches (recordbatch.Checked), and notes what passed for the append. A
// set that is not made of whole v2 batches is only skipped: the append
// refuses it with the error to report.
func (s *produceScan) records(l int) error {
	c := s.c
	if l > c.rem() {
		return errShort
	}
	start, end := c.pos, c.pos+l
	var ck recordbatch.Checked
	for c.pos < end {
		hn := min(recordbatch.HeaderSize, end-c.pos)
		if err := c.need(hn); err != nil {
			return err
		}
		h, err := recordbatch.ParseHeader(c.f.buf[c.pos : c.pos+hn])
		if err != nil || h.Size() > int64(end-c.pos) {
			break
		}
		n := int(h.Size())
		if err := c.need(n); err != nil {
			return err
		}
		ck.CheckAhead(c.f.buf[c.pos : c.pos+n])
		c.pos += n
	}
	if c.pos == end && ck.Valid() {
		// Room for the topic's partitions left, charged with them: one
		// allocation for a request of one topic, none for one with
		// nothing checked (compressed batches).
		c.f.checked = slices.Grow(c.f.checked, s.partsLeft)
		// Offsets, not slices: the frame's buffer may still move as it
		// grows.
		c.f.checked = append(c.f.checked, checkedRange{start: start, n: l, ck: ck})
	}
	return c.skip(end - c.pos) // what the walk stopped short of
}

// stringLen reads a string's length: compact (uvarint n+1) when flexible,
// else int16. Negative is null.
func (s *produceScan) stringLen() (int, error) {
	if s.flexible {
		u, err := s.c.uvarint()
		return int(u) - 1, err
	}
	n, err := s.c.int16()
	return int(n), err
}

// bytesLen reads a byte array's length: compact when flexible, else int32.
func (s *produceScan) bytesLen() (int, error) {
	if s.flexible {
		u, err := s.c.uvarint()
		return int(u) - 1, err
	}
	n, err := s.c.int32()
	return int(n), err
}

// arrayLen reads an array length as kmsg does: a count larger than the
// bytes left is an error, a negative one an empty (null) array.
func (s *produceScan) arrayLen() (int32, error) {
	var l int32
	if s.flexible {
		u, err := s.c.uvarint()
		if err != nil {
			return 0, err
		}
		l = int32(u) - 1
	} else {
		n, err := s.c.int32()
		if err != nil {
			return 0, err
		}
		l = n
	}
	if int64(l) > int64(s.c.rem()) {
		return 0, errShort
	}
	return l, nil
}

// tags walks a tagged-field section (flexible versions only) and charges
// every field, as kmsg keeps each in a map.
func (s *produceScan) tags() error {
	if !s.flexible {
		return nil
	}
	c := s.c
	if err := c.need(1); err != nil {
		return err
	}
	if c.f.buf[c.pos] == 0 {
		c.pos++
		return nil
	}
	n, err := c.uvarint()
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		if _, err := c.uvarint(); err != nil { // key
			return err
		}
		size, err := c.uvarint()
		if err != nil {
			return err
		}
		if err := c.skip(int(size)); err != nil {
			return err
		}
		if err := s.add(tagCost); err != nil {
			return err
		}
	}
	return nil
}
