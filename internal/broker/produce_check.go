package broker

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Offsets into a record batch that checkProduceRecords needs before the
// storage layer validates the batch in full.
const (
	batchLengthEnd = 12 // baseOffset + batchLength
	batchMagicAt   = 16
	batchAttrsAt   = 21
	batchAttrsEnd  = 23
	codecMask      = 0x07
	codecZstd      = 4
	firstZstdVer   = 7 // Produce v7 introduced zstd (KIP-110)
	recordsMagic   = 2
)

// checkProduceRecords applies Kafka's request-level rules for Produce v3+
// (ProduceRequest.validateRecords) before anything reaches the log: the
// partition's records must be exactly one whole magic-v2 batch, and zstd
// needs v7+. Deeper checks (CRC, counts, sizes) are the log's.
func checkProduceRecords(version int16, records []byte) (*kerr.Error, string) {
	size, ok := wholeBatch(records)
	if !ok {
		return kerr.InvalidRecord, fmt.Sprintf("Produce requests with version %d must have at least one record batch per partition", version)
	}
	if records[batchMagicAt] != recordsMagic {
		return kerr.InvalidRecord, fmt.Sprintf("Produce requests with version %d are only allowed to contain record batches with magic version 2", version)
	}
	if len(records) >= batchAttrsEnd && version < firstZstdVer &&
		binary.BigEndian.Uint16(records[batchAttrsAt:])&codecMask == codecZstd {
		return kerr.UnsupportedCompressionType, fmt.Sprintf("Produce requests with version %d are not allowed to use ZStandard compression", version)
	}
	if _, more := wholeBatch(records[size:]); more {
		return kerr.InvalidRecord, fmt.Sprintf("Produce requests with version %d are only allowed to contain exactly one record batch per partition", version)
	}
	return nil, ""
}

// wholeBatch reports whether b starts with a complete batch (by its length
// field, with the magic byte present) and its size.
func wholeBatch(b []byte) (int, bool) {
	if len(b) <= batchMagicAt {
		return 0, false
	}
	size := int64(batchLengthEnd) + int64(int32(binary.BigEndian.Uint32(b[8:])))
	if size <= batchMagicAt || size > int64(len(b)) {
		return 0, false
	}
	return int(size), true
}
