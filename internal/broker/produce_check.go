package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// firstZstdVersion is the Produce version that introduced zstd (KIP-110).
const firstZstdVersion = 7

// checkProduceRecords applies Kafka's request-level rules for Produce v3+
// (ProduceRequest.validateRecords) before anything reaches the log: the
// partition's records must be exactly one magic-v2 batch, and zstd needs
// v7+. Bytes after the batch too short to be another batch are trimmed,
// as Kafka's log does with a partial trailing message. It returns the
// records to append; deeper checks (CRC, counts, sizes) are the log's.
func checkProduceRecords(version int16, records []byte) ([]byte, *kerr.Error, string) {
	if magic, ok := recordbatch.Magic(records); ok && magic != 2 {
		return nil, kerr.InvalidRecord, fmt.Sprintf("Produce requests with version %d are only allowed to contain record batches with magic version 2", version)
	}
	h, ok := wholeBatch(records)
	if !ok {
		return nil, kerr.InvalidRecord, fmt.Sprintf("Produce requests with version %d must have at least one record batch per partition", version)
	}
	if version < firstZstdVersion && h.Compression() == recordbatch.CompressionZstd {
		return nil, kerr.UnsupportedCompressionType, fmt.Sprintf("Produce requests with version %d are not allowed to use ZStandard compression", version)
	}
	if _, more := wholeBatch(records[h.Size():]); more {
		return nil, kerr.InvalidRecord, fmt.Sprintf("Produce requests with version %d are only allowed to contain exactly one record batch per partition", version)
	}
	return records[:h.Size()], nil, ""
}

// wholeBatch reports whether b starts with a complete batch by its header
// and length field.
func wholeBatch(b []byte) (recordbatch.Header, bool) {
	if len(b) < recordbatch.HeaderSize {
		// Too short for a header: no need for ParseHeader's error, which
		// the usual empty rest after a request's batch would allocate.
		return recordbatch.Header{}, false
	}
	h, err := recordbatch.ParseHeader(b)
	return h, err == nil && h.Size() <= int64(len(b))
}
