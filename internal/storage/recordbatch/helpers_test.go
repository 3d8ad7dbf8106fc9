package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
)

var allCodecs = []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

// sampleRecords covers null and empty keys and values, headers with null
// values and negative timestamp deltas.
func sampleRecords() []Record {
	return []Record{
		{TimestampDelta: 0, Key: []byte("k0"), Value: []byte("hello")},
		{TimestampDelta: 5, Key: nil, Value: []byte{}},
		{TimestampDelta: -3, Key: []byte{}, Value: nil, Headers: []RecordHeader{
			{Key: "trace", Value: []byte("abc")},
			{Key: "", Value: nil},
		}},
		{TimestampDelta: 1 << 40, Key: []byte("big"), Value: make([]byte, 3000)},
	}
}

func defaultOpts() BuildOptions {
	return BuildOptions{BaseOffset: 0, BaseTimestamp: 1_700_000_000_000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

func mustBuild(t testing.TB, opts BuildOptions, recs []Record) []byte {
	t.Helper()
	b, err := Build(opts, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

// fixCRC recomputes the CRC after a test edits CRC-covered bytes.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// withBody replaces the records section of batch b, fixing length and CRC.
func withBody(b, body []byte) []byte {
	out := append(append([]byte(nil), b[:HeaderSize]...), body...)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-lengthFieldEnd))
	fixCRC(out)
	return out
}

// setCount sets recordCount and lastOffsetDelta consistently.
func setCount(b []byte, n int32) {
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(n))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(n-1))
	fixCRC(b)
}

// rawRecords encodes records with the given offset deltas (uncompressed).
func rawRecords(deltas ...int32) []byte {
	var body []byte
	for _, d := range deltas {
		body = appendRecord(body, d, Record{Value: []byte(fmt.Sprint("v", d))})
	}
	return body
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
	t.Logf("got expected error: %v", err)
}
