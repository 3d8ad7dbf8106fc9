// Package recordbatch reads, checks and patches Kafka record batches (magic
// v2), the unit a producer sends, the log stores and a fetch returns.
//
// Layout (big-endian, 61-byte header, then the records, compressed as a whole):
//
//	offset  size  field
//	 0      8     baseOffset            patched by the broker
//	 8      4     batchLength           bytes after this field
//	12      4     partitionLeaderEpoch  patched by the broker
//	16      1     magic (= 2)
//	17      4     crc                   CRC-32C of bytes 21..end
//	21      2     attributes            bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control,
//	                                    6 delete horizon (baseTimestamp is it; set by the log cleaner)
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records
//
// baseOffset and partitionLeaderEpoch lie outside the CRC, so patching them
// needs no new checksum; switching to LogAppendTime does.
package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of the fixed batch header.
const HeaderSize = 61

// Errors, mapped by the broker to Kafka error codes.
var (
	// ErrCorrupt: bad CRC, bad magic, impossible lengths (CORRUPT_MESSAGE).
	ErrCorrupt = errors.New("corrupt record batch")
	// ErrInvalidRecord: the batch is intact but its contents break the rules,
	// e.g. record count disagrees with lastOffsetDelta (INVALID_RECORD).
	ErrInvalidRecord = errors.New("invalid record")
)

// Compression codec, attributes bits 0-2.
type Compression int8

const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

// Header is the decoded fixed part of a batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // batchLength: bytes after the length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Field offsets within the header.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// lengthFieldEnd is where batchLength starts counting.
	lengthFieldEnd = offLeaderEpoch
	// minLength is the smallest batchLength: a header with no records.
	minLength = HeaderSize - lengthFieldEnd

	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizon   = 0x40
)

// castagnoli is read-only after package initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Size is the whole batch's size in bytes (12 + Length).
func (h Header) Size() int64 { return lengthFieldEnd + int64(h.Length) }

// LastOffset is BaseOffset + LastOffsetDelta.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

func (h Header) Compression() Compression { return Compression(h.Attributes & attrCompressionMask) }
func (h Header) LogAppendTime() bool      { return h.Attributes&attrLogAppendTime != 0 }
func (h Header) Transactional() bool      { return h.Attributes&attrTransactional != 0 }
func (h Header) Control() bool            { return h.Attributes&attrControl != 0 }

// DeleteHorizon reports whether the log cleaner stamped a delete horizon
// (KIP-534): then BaseTimestamp is the time from which the batch's
// tombstones may be removed.
func (h Header) DeleteHorizon() (ms int64, set bool) {
	return h.BaseTimestamp, h.Attributes&attrDeleteHorizon != 0
}

// ParseHeader decodes the header at the start of b without checking the CRC.
// It fails with ErrCorrupt if b is shorter than HeaderSize, the magic is not
// 2, or Length is below the minimum (HeaderSize-12).
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrCorrupt, len(b), HeaderSize)
	}
	be := binary.BigEndian
	h := Header{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		Length:               int32(be.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: magic %d, want 2", ErrCorrupt, h.Magic)
	}
	if h.Length < minLength {
		return h, fmt.Errorf("%w: batch length %d below minimum %d", ErrCorrupt, h.Length, minLength)
	}
	return h, nil
}

// Magic returns the magic byte of the batch at the start of b. Legacy
// message sets (magic 0 and 1) keep it at the same position, so this tells
// them apart before a v2 header can be parsed. ok=false if b is too short.
func Magic(b []byte) (magic int8, ok bool) {
	if len(b) <= offMagic {
		return 0, false
	}
	return int8(b[offMagic]), true
}

// CheckCRC verifies the CRC-32C of the single batch b.
func CheckCRC(b []byte) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: %d bytes, header needs %d", ErrCorrupt, len(b), HeaderSize)
	}
	want := binary.BigEndian.Uint32(b[offCRC:])
	if got := crc32.Checksum(b[offAttributes:], castagnoli); got != want {
		return fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, want)
	}
	return nil
}

// Validate checks that b is exactly one well-formed batch, as a producer
// must send it: header sane, size matches, CRC right, recordCount ==
// lastOffsetDelta+1 and > 0, producer fields consistent (producerId -1 <=>
// baseSequence -1 ...). For uncompressed batches the records are walked and
// their count and offset deltas checked; compressed ones are decompressed
// and walked too. Errors wrap ErrCorrupt or ErrInvalidRecord.
//
// Control batches are not rejected here: whether a caller may write them
// (clients may not, coordinators may) is the broker's decision.
func Validate(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: batch size %d, have %d bytes", ErrCorrupt, h.Size(), len(b))
	}
	if err := CheckCRC(b); err != nil {
		return h, err
	}
	if h.RecordCount <= 0 {
		return h, fmt.Errorf("%w: record count %d", ErrInvalidRecord, h.RecordCount)
	}
	if int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 {
		return h, fmt.Errorf("%w: record count %d, last offset delta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	}
	if err := checkProducer(h); err != nil {
		return h, err
	}
	if err := walkRecords(b, h, nil); err != nil {
		return h, err
	}
	return h, nil
}

// checkProducer applies Kafka's rules tying producer id, sequence and the
// transactional flag together. Without a producer id (any negative id) the
// sequence is ignored, as Kafka does: non-idempotent franz-go producers
// send sequence 0 with producer id -1.
func checkProducer(h Header) error {
	switch {
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return fmt.Errorf("%w: base sequence %d with producer id %d", ErrInvalidRecord, h.BaseSequence, h.ProducerID)
	case h.Transactional() && h.ProducerID < 0:
		return fmt.Errorf("%w: transactional batch without producer id", ErrInvalidRecord)
	}
	return nil
}

// Split walks a concatenation of batches (a produce request's or a segment's
// bytes) and calls fn for each with its bytes and header. A trailing partial
// batch or a bad header stops it with an error wrapping ErrCorrupt that
// gives the byte position. An error from fn stops the walk and is returned
// as is. CRCs are not checked: callers that need it call CheckCRC.
func Split(b []byte, fn func(batch []byte, h Header) error) error {
	for pos := 0; pos < len(b); {
		h, err := ParseHeader(b[pos:])
		if err != nil {
			return fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		size := h.Size()
		if size > int64(len(b)-pos) {
			return fmt.Errorf("batch at byte %d: %w: size %d, only %d bytes left", pos, ErrCorrupt, size, len(b)-pos)
		}
		end := pos + int(size)
		if err := fn(b[pos:end:end], h); err != nil {
			return err
		}
		pos = end
	}
	return nil
}

// SetBaseOffset patches baseOffset in place.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch patches partitionLeaderEpoch in place.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime sets the timestamp-type bit, maxTimestamp = ts and
// recomputes the CRC, in place.
func SetLogAppendTime(b []byte, ts int64) {
	be := binary.BigEndian
	attrs := be.Uint16(b[offAttributes:]) | attrLogAppendTime
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint64(b[offMaxTimestamp:], uint64(ts))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}
