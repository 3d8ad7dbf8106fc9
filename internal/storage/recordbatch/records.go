package recordbatch

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record is one decoded record.
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key            []byte // nil = null key
	Value          []byte // nil = null value (tombstone)
	Headers        []RecordHeader
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key   string
	Value []byte
}

// minRecordSize is the smallest encoding of a record: one byte each for
// length, attributes, timestamp delta, offset delta, key length, value
// length and header count. It bounds how many records a buffer can hold.
const minRecordSize = 7

// Records decodes (decompressing if needed) the records of batch b.
// Snappy is accepted raw and in xerial framing. Key, Value and header values
// alias b (or the decompressed buffer): copy them to keep them past b.
//
// Unlike Validate, offset deltas need not be 0..n-1: compaction leaves gaps.
func Records(b []byte) ([]Record, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Size() > int64(len(b)) {
		return nil, fmt.Errorf("%w: batch size %d, have %d bytes", ErrCorrupt, h.Size(), len(b))
	}
	var out []Record
	err = walkRecords(b[:h.Size()], h, func(r Record) { out = append(out, r) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walkRecords decodes every record of the batch b (exactly h.Size() bytes).
// With fn nil it validates as for a produce request: offset deltas must run
// 0..n-1 and no headers are materialised. With fn set, it hands each record
// over and tolerates gapped deltas (compacted batches).
func walkRecords(b []byte, h Header, fn func(Record)) error {
	if h.RecordCount < 0 {
		return fmt.Errorf("%w: record count %d", ErrCorrupt, h.RecordCount)
	}
	data := b[HeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		var err error
		if data, err = decompress(c, data); err != nil {
			return err
		}
	}
	if int64(h.RecordCount) > int64(len(data)/minRecordSize) {
		return fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrInvalidRecord, h.RecordCount, len(data))
	}
	strict := fn == nil
	if strict {
		for i := int32(0); i < h.RecordCount; i++ {
			n, ok := checkRecord(data, i)
			if !ok {
				return strictRecordErr(data, i)
			}
			data = data[n:]
		}
		if len(data) != 0 {
			return fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(data), h.RecordCount)
		}
		return nil
	}
	prevDelta := int64(-1)
	for i := int32(0); i < h.RecordCount; i++ {
		r, n, err := parseRecord(data, !strict)
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		data = data[n:]
		if strict && r.OffsetDelta != i {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, r.OffsetDelta)
		}
		if !strict && int64(r.OffsetDelta) <= prevDelta {
			return fmt.Errorf("%w: record %d offset delta %d not above %d", ErrInvalidRecord, i, r.OffsetDelta, prevDelta)
		}
		prevDelta = int64(r.OffsetDelta)
		if fn != nil {
			fn(r)
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalidRecord, len(data), h.RecordCount)
	}
	return nil
}

// strictRecordErr is the error for record i at the start of b, which
// checkRecord refused: parseRecord's, or the offset delta's.
func strictRecordErr(b []byte, i int32) error {
	r, _, err := parseRecord(b, false)
	if err != nil {
		return fmt.Errorf("record %d: %w", i, err)
	}
	if r.OffsetDelta != i {
		return fmt.Errorf("%w: record %d has offset delta %d", ErrInvalidRecord, i, r.OffsetDelta)
	}
	// checkRecord and parseRecord disagree (FuzzCheckRecord forbids it):
	// refuse rather than accept what one walk found wrong.
	return fmt.Errorf("%w: record %d malformed", ErrInvalidRecord, i)
}

// parseRecord decodes the record at the start of b and returns it with its
// encoded size. Headers are decoded (and allocated) only if withHeaders;
// they are always checked.
func parseRecord(b []byte, withHeaders bool) (Record, int, error) {
	var r Record
	length, n, err := varint32(b)
	if err != nil {
		return r, 0, fmt.Errorf("record length: %w", err)
	}
	if length < 0 || int64(length) > int64(len(b)-n) {
		return r, 0, fmt.Errorf("%w: record length %d, %d bytes left", ErrInvalidRecord, length, len(b)-n)
	}
	total := n + int(length)
	d := decoder{b: b[n:total]}
	d.byte() // attributes: unused in v2
	r.TimestampDelta = d.varint64()
	r.OffsetDelta = d.varint32()
	r.Key = d.bytes()
	r.Value = d.bytes()
	count := d.varint32()
	if d.err == nil && (count < 0 || int(count) > len(d.b)/2) {
		d.fail("header count %d with %d bytes left", count, len(d.b))
	}
	if withHeaders && d.err == nil && count > 0 {
		r.Headers = make([]RecordHeader, 0, count)
	}
	for i := int32(0); i < count && d.err == nil; i++ {
		key := d.bytes()
		if d.err == nil && key == nil {
			d.fail("header %d has a null key", i)
		}
		value := d.bytes()
		if withHeaders && d.err == nil {
			r.Headers = append(r.Headers, RecordHeader{Key: string(key), Value: value})
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes left inside record", len(d.b))
	}
	if d.err != nil {
		return Record{}, 0, d.err
	}
	return r, total, nil
}

// decoder reads Kafka's zig-zag varints and length-prefixed byte strings
// from a record body, remembering the first error so the caller checks once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("record truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint64() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varlong")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint32() int32 {
	if d.err != nil {
		return 0
	}
	v, n, err := varint32(d.b)
	if err != nil {
		d.err = err
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a varint length and that many bytes; length -1 is null.
func (d *decoder) bytes() []byte {
	n := d.varint32()
	if d.err != nil {
		return nil
	}
	switch {
	case n == -1:
		return nil
	case n < -1 || int(n) > len(d.b):
		d.fail("field length %d with %d bytes left", n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// varint32 decodes a zig-zag varint that must fit Kafka's 5-byte int32 form.
func varint32(b []byte) (int32, int, error) {
	v, n := binary.Varint(b)
	if n <= 0 || n > binary.MaxVarintLen32 || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w: bad varint", ErrInvalidRecord)
	}
	return int32(v), n, nil
}

// CheckKeys fails with ErrInvalidRecord if any record of the batch b has a
// null key: a compacted topic keeps the latest record per key, so Kafka
// refuses keyless records for it at produce time.
func CheckKeys(b []byte) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if h.Size() > int64(len(b)) {
		return fmt.Errorf("%w: batch size %d, have %d bytes", ErrCorrupt, h.Size(), len(b))
	}
	i := 0
	var missing error
	err = walkRecords(b[:h.Size()], h, func(r Record) {
		if r.Key == nil && missing == nil {
			missing = fmt.Errorf("%w: record %d has no key, which a compacted topic requires", ErrInvalidRecord, i)
		}
		i++
	})
	if err != nil {
		return err
	}
	return missing
}
