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
//	21      2     attributes            bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control
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

import "errors"

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

// Size is the whole batch's size in bytes (12 + Length).
func (h Header) Size() int64 { panic("TODO") }

// LastOffset is BaseOffset + LastOffsetDelta.
func (h Header) LastOffset() int64 { panic("TODO") }

func (h Header) Compression() Compression { panic("TODO") }
func (h Header) LogAppendTime() bool      { panic("TODO") }
func (h Header) Transactional() bool      { panic("TODO") }
func (h Header) Control() bool            { panic("TODO") }

// ParseHeader decodes the header at the start of b without checking the CRC.
// It fails with ErrCorrupt if b is shorter than HeaderSize, the magic is not
// 2, or Length is below the minimum (HeaderSize-12).
func ParseHeader(b []byte) (Header, error) { panic("TODO") }

// CheckCRC verifies the CRC-32C of the single batch b.
func CheckCRC(b []byte) error { panic("TODO") }

// Validate checks that b is exactly one well-formed batch, as a producer
// must send it: header sane, size matches, CRC right, recordCount ==
// lastOffsetDelta+1 and > 0, producer fields consistent (producerId -1 <=>
// baseSequence -1 ...). For uncompressed batches the records are walked and
// their count and offset deltas checked; compressed ones are decompressed
// and walked too. Errors wrap ErrCorrupt or ErrInvalidRecord.
func Validate(b []byte) (Header, error) { panic("TODO") }

// Split walks a concatenation of batches (a produce request's or a segment's
// bytes) and calls fn for each with its bytes and header. A trailing partial
// batch or a bad header stops it with an error wrapping ErrCorrupt that
// gives the byte position.
func Split(b []byte, fn func(batch []byte, h Header) error) error { panic("TODO") }

// SetBaseOffset patches baseOffset in place.
func SetBaseOffset(b []byte, offset int64) { panic("TODO") }

// SetPartitionLeaderEpoch patches partitionLeaderEpoch in place.
func SetPartitionLeaderEpoch(b []byte, epoch int32) { panic("TODO") }

// SetLogAppendTime sets the timestamp-type bit, maxTimestamp = ts and
// recomputes the CRC, in place.
func SetLogAppendTime(b []byte, ts int64) { panic("TODO") }

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

// Records decodes (decompressing if needed) the records of batch b.
// Snappy is accepted raw and in xerial framing.
func Records(b []byte) ([]Record, error) { panic("TODO") }

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
}

// Build encodes records into one batch with a correct CRC. Used by tests
// and by the CLI-free parts of the broker that must write batches. Record
// OffsetDelta fields are ignored: records get deltas 0..n-1.
func Build(opts BuildOptions, records []Record) ([]byte, error) { panic("TODO") }
