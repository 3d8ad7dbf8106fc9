package broker

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

func TestCheckProduceRecords(t *testing.T) {
	build := func(c recordbatch.Compression) []byte {
		b, err := recordbatch.Build(recordbatch.BuildOptions{Compression: c, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]recordbatch.Record{{Value: []byte("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := build(recordbatch.CompressionNone)
	legacy := append([]byte(nil), one...)
	legacy[16] = 1
	cases := []struct {
		name    string
		version int16
		records []byte
		want    *kerr.Error
		kept    []byte
	}{
		{"one batch", 9, one, nil, one},
		{"partial tail trimmed", 9, append(append([]byte(nil), one...), 0, 0, 0), nil, one},
		{"two batches", 9, append(append([]byte(nil), one...), one...), kerr.InvalidRecord, nil},
		{"empty", 9, nil, kerr.InvalidRecord, nil},
		{"truncated", 9, one[:len(one)-1], kerr.InvalidRecord, nil},
		{"legacy magic", 9, legacy, kerr.InvalidRecord, nil},
		{"zstd before v7", 6, build(recordbatch.CompressionZstd), kerr.UnsupportedCompressionType, nil},
		{"zstd at v7", 7, build(recordbatch.CompressionZstd), nil, nil},
	}
	for _, c := range cases {
		kept, got, msg := checkProduceRecords(c.version, c.records)
		if got != c.want {
			t.Errorf("%s: got %v (%s), want %v", c.name, got, msg, c.want)
			continue
		}
		if c.kept != nil && !bytes.Equal(kept, c.kept) {
			t.Errorf("%s: kept %d bytes, want %d", c.name, len(kept), len(c.kept))
		}
	}
}
