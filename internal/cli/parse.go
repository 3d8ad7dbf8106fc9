package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// parseAcks maps Kafka's acks spellings to kgo's.
func parseAcks(s string) (kgo.Acks, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "0":
		return kgo.NoAck(), nil
	case "1":
		return kgo.LeaderAck(), nil
	case "-1", "all":
		return kgo.AllISRAcks(), nil
	}
	return kgo.Acks{}, fmt.Errorf("--acks %q: want 0, 1, -1 or all", s)
}

// acksAreAll reports whether s means acks=-1; idempotence needs it.
func acksAreAll(s string) bool {
	s = strings.TrimSpace(strings.ToLower(s))
	return s == "-1" || s == "all"
}

// parseCompression maps a codec name to kgo's codec.
func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

// parsePartitioner picks the partitioner for records without an explicit
// partition. "default" is Java's pre-3.3 default: murmur2 of the key masked
// to 31 bits modulo the partition count for keyed records, sticky for
// keyless ones (kgo.StickyKeyPartitioner with a nil hasher does exactly
// that).
func parsePartitioner(s string) (kgo.Partitioner, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "default", "":
		return kgo.StickyKeyPartitioner(nil), nil
	case "round-robin", "roundrobin":
		return kgo.RoundRobinPartitioner(), nil
	}
	return nil, fmt.Errorf("--partitioner %q: want default or round-robin", s)
}

// splitKeyValue splits "k=v" at the first '='; the value may itself hold '='.
// flag names the option in the error.
func splitKeyValue(flag, s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("%s %q: want key=value", flag, s)
	}
	return k, v, nil
}

// parseConfigs turns repeated k=v flags into a config map for kadm; a key
// given twice is a mistake rather than "last one wins".
func parseConfigs(flag string, kvs []string) (map[string]*string, error) {
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, err := splitKeyValue(flag, kv)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: %q given twice", flag, k)
		}
		out[k] = &v
	}
	return out, nil
}

// parseHeaders turns repeated --header k=v flags into record headers, in
// the order given (Kafka headers are an ordered list and may repeat keys).
func parseHeaders(kvs []string) ([]kgo.RecordHeader, error) {
	var out []kgo.RecordHeader
	for _, kv := range kvs {
		k, v, err := splitKeyValue("--header", kv)
		if err != nil {
			return nil, err
		}
		out = append(out, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return out, nil
}

// parseTimestamp accepts RFC 3339 or Unix milliseconds and returns Unix
// milliseconds, which is what ListOffsets by time wants.
func parseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("--from-time %q: negative timestamp", s)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("--from-time %q: want RFC 3339 (2006-01-02T15:04:05Z) or Unix milliseconds", s)
	}
	ms := t.UnixMilli()
	if ms < 0 {
		return 0, fmt.Errorf("--from-time %q: before 1970", s)
	}
	return ms, nil
}

// parseStartOffset reads --offset: an absolute offset, or earliest/latest.
func parseStartOffset(s string) (kgo.Offset, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "earliest", "beginning":
		return kgo.NewOffset().AtStart(), nil
	case "latest", "end":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, fmt.Errorf("--offset %q: want a non-negative offset, earliest or latest", s)
	}
	return kgo.NewOffset().At(n), nil
}
