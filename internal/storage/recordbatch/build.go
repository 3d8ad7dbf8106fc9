package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Builder options for Build.
type BuildOptions struct {
	BaseOffset    int64
	BaseTimestamp int64 // ms
	Compression   Compression
	ProducerID    int64 // -1 for none
	ProducerEpoch int16 // -1 for none
	BaseSequence  int32 // -1 for none
	LeaderEpoch   int32
	Transactional bool
	LogAppendTime bool
	// Control marks a control batch (transaction markers), written only by
	// coordinators, never accepted from clients.
	Control bool

	// KeepOffsetDeltas re-encodes a batch the log cleaner has filtered:
	// each Record.OffsetDelta is written as given (strictly increasing,
	// within 0..LastOffsetDelta), the header carries LastOffsetDelta and
	// MaxTimestamp as given, and records may be empty (a batch kept only
	// for its producer fields and offsets). Producers never send such
	// batches; Validate rejects them, Records reads them.
	KeepOffsetDeltas bool
	LastOffsetDelta  int32
	MaxTimestamp     int64
	// DeleteHorizon sets attribute bit 6 (KIP-534): BaseTimestamp is then
	// the time after which the batch's tombstones may be removed, and the
	// record timestamp deltas are relative to it.
	DeleteHorizon bool
}

// Build encodes records into one batch with a correct CRC. Used by tests
// and by the CLI-free parts of the broker that must write batches. Record
// OffsetDelta fields are ignored unless KeepOffsetDeltas: records get
// deltas 0..n-1. maxTimestamp is the greatest record timestamp, or
// BaseTimestamp under LogAppendTime (MaxTimestamp with KeepOffsetDeltas).
func Build(opts BuildOptions, records []Record) ([]byte, error) {
	if len(records) == 0 && !opts.KeepOffsetDeltas {
		return nil, errors.New("build batch: no records")
	}
	if opts.Compression < CompressionNone || opts.Compression > CompressionZstd {
		return nil, fmt.Errorf("build batch: unknown compression codec %d", opts.Compression)
	}
	if opts.KeepOffsetDeltas {
		if err := checkKeptDeltas(opts.LastOffsetDelta, records); err != nil {
			return nil, err
		}
	}
	var body []byte
	var maxDelta int64
	if len(records) > 0 {
		maxDelta = records[0].TimestampDelta
	}
	for i, r := range records {
		delta := int32(i)
		if opts.KeepOffsetDeltas {
			delta = r.OffsetDelta
		}
		body = appendRecord(body, delta, r)
		maxDelta = max(maxDelta, r.TimestampDelta)
	}
	codec := opts.Compression
	if len(records) == 0 {
		// An empty batch has nothing to compress; a codec frame around
		// zero bytes would only give clients something to trip over.
		codec = CompressionNone
	}
	body, err := compress(codec, body)
	if err != nil {
		return nil, fmt.Errorf("build batch: %w", err)
	}
	if int64(len(body)) > math.MaxInt32-minLength {
		return nil, fmt.Errorf("build batch: %d bytes of records is too large", len(body))
	}

	attrs := uint16(codec)
	maxTimestamp := opts.BaseTimestamp + maxDelta
	if opts.LogAppendTime {
		attrs |= attrLogAppendTime
		maxTimestamp = opts.BaseTimestamp
	}
	lastOffsetDelta := uint32(len(records) - 1)
	if opts.KeepOffsetDeltas {
		maxTimestamp = opts.MaxTimestamp
		lastOffsetDelta = uint32(opts.LastOffsetDelta)
	}
	if opts.DeleteHorizon {
		attrs |= attrDeleteHorizon
	}
	if opts.Transactional {
		attrs |= attrTransactional
	}
	if opts.Control {
		attrs |= attrControl
	}

	b := make([]byte, HeaderSize, HeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(opts.BaseOffset))
	be.PutUint32(b[offLength:], uint32(minLength+len(body)))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.LeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], lastOffsetDelta)
	be.PutUint64(b[offBaseTimestamp:], uint64(opts.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(opts.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(opts.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(opts.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(records)))
	b = append(b, body...)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b, nil
}

// checkKeptDeltas insists explicit offset deltas are strictly increasing
// and within the batch, so the batch reads back as Records expects.
func checkKeptDeltas(last int32, records []Record) error {
	if last < 0 {
		return fmt.Errorf("build batch: last offset delta %d", last)
	}
	prev := int32(-1)
	for i, r := range records {
		if r.OffsetDelta <= prev || r.OffsetDelta > last {
			return fmt.Errorf("build batch: record %d offset delta %d not in (%d, %d]", i, r.OffsetDelta, prev, last)
		}
		prev = r.OffsetDelta
	}
	return nil
}

// appendRecord encodes one record (Kafka's varint record format) onto b.
func appendRecord(b []byte, offsetDelta int32, r Record) []byte {
	body := make([]byte, 0, 16+len(r.Key)+len(r.Value))
	body = append(body, 0) // attributes
	body = binary.AppendVarint(body, r.TimestampDelta)
	body = binary.AppendVarint(body, int64(offsetDelta))
	body = appendBytes(body, r.Key)
	body = appendBytes(body, r.Value)
	body = binary.AppendVarint(body, int64(len(r.Headers)))
	for _, h := range r.Headers {
		body = appendBytes(body, []byte(h.Key))
		body = appendBytes(body, h.Value)
	}
	b = binary.AppendVarint(b, int64(len(body)))
	return append(b, body...)
}

// appendBytes writes a varint length (-1 for nil) and the bytes.
func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}
