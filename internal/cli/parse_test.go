package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseAcks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want kgo.Acks
	}{
		{"0", kgo.NoAck()},
		{"1", kgo.LeaderAck()},
		{"-1", kgo.AllISRAcks()},
		{"all", kgo.AllISRAcks()},
		{"ALL", kgo.AllISRAcks()},
	} {
		got, err := parseAcks(tc.in)
		if err != nil {
			t.Fatalf("parseAcks(%q): %v", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("parseAcks(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "2", "-2", "none", "1 1"} {
		if _, err := parseAcks(bad); err == nil || !strings.Contains(err.Error(), "--acks") {
			t.Errorf("parseAcks(%q) = %v, want an --acks error", bad, err)
		}
	}
}

func TestParseCompression(t *testing.T) {
	for _, ok := range []string{"none", "gzip", "snappy", "lz4", "zstd", "ZSTD"} {
		if _, err := parseCompression(ok); err != nil {
			t.Errorf("parseCompression(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"brotli", "gz", "lz4hc"} {
		if _, err := parseCompression(bad); err == nil || !strings.Contains(err.Error(), "--compression") {
			t.Errorf("parseCompression(%q) = %v, want a --compression error", bad, err)
		}
	}
}

func TestParsePartitioner(t *testing.T) {
	for _, ok := range []string{"default", "round-robin"} {
		if p, err := parsePartitioner(ok); err != nil || p == nil {
			t.Errorf("parsePartitioner(%q) = %v, %v", ok, p, err)
		}
	}
	if _, err := parsePartitioner("random"); err == nil {
		t.Error("parsePartitioner(random): want an error")
	}
	// round-robin really goes round: 0,1,2,0 over 3 partitions.
	p, _ := parsePartitioner("round-robin")
	tp := p.ForTopic("t")
	var got []int
	for range 4 {
		got = append(got, tp.Partition(&kgo.Record{Key: []byte("same")}, 3))
	}
	if got[0] == got[1] || got[1] == got[2] || got[0] != got[3] {
		t.Errorf("round-robin partitions = %v, want a cycle of 3", got)
	}
}

func TestSplitKeyValue(t *testing.T) {
	k, v, err := splitKeyValue("--config", "retention.ms=1000")
	if err != nil || k != "retention.ms" || v != "1000" {
		t.Errorf("got %q %q %v", k, v, err)
	}
	// Only the first '=' separates; values may contain more.
	k, v, err = splitKeyValue("--header", "trace=a=b")
	if err != nil || k != "trace" || v != "a=b" {
		t.Errorf("got %q %q %v", k, v, err)
	}
	k, v, err = splitKeyValue("--header", "empty=")
	if err != nil || k != "empty" || v != "" {
		t.Errorf("got %q %q %v", k, v, err)
	}
	for _, bad := range []string{"novalue", "=v", ""} {
		if _, _, err := splitKeyValue("--config", bad); err == nil || !strings.Contains(err.Error(), "--config") {
			t.Errorf("splitKeyValue(%q) = %v, want a --config error", bad, err)
		}
	}
}

func TestParseConfigs(t *testing.T) {
	cfg, err := parseConfigs("--config", []string{"a=1", "b=x=y"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg) != 2 || *cfg["a"] != "1" || *cfg["b"] != "x=y" {
		t.Errorf("configs = %v", cfg)
	}
	if _, err := parseConfigs("--config", []string{"a=1", "a=2"}); err == nil {
		t.Error("duplicate key: want an error")
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := parseHeaders([]string{"k=v", "k=w", "e="})
	if err != nil {
		t.Fatal(err)
	}
	want := []kgo.RecordHeader{{Key: "k", Value: []byte("v")}, {Key: "k", Value: []byte("w")}, {Key: "e", Value: []byte{}}}
	if len(h) != len(want) {
		t.Fatalf("headers = %v", h)
	}
	for i := range want {
		if h[i].Key != want[i].Key || string(h[i].Value) != string(want[i].Value) {
			t.Errorf("header %d = %q=%q, want %q=%q", i, h[i].Key, h[i].Value, want[i].Key, want[i].Value)
		}
	}
	if _, err := parseHeaders([]string{"nokv"}); err == nil || !strings.Contains(err.Error(), "--header") {
		t.Errorf("want a --header error, got %v", err)
	}
}

func TestParseTimestamp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1700000000123", 1700000000123},
		{"2023-11-14T22:13:20Z", 1700000000000},
		{"2023-11-14T23:13:20.5+01:00", 1700000000500},
	} {
		got, err := parseTimestamp(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseTimestamp(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5", "2023-11-14", "1960-01-01T00:00:00Z"} {
		if _, err := parseTimestamp(bad); err == nil || !strings.Contains(err.Error(), "--from-time") {
			t.Errorf("parseTimestamp(%q) = %v, want a --from-time error", bad, err)
		}
	}
}

func TestParseStartOffset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want kgo.Offset
	}{
		{"42", kgo.NewOffset().At(42)},
		{"0", kgo.NewOffset().At(0)},
		{"earliest", kgo.NewOffset().AtStart()},
		{"latest", kgo.NewOffset().AtEnd()},
	} {
		got, err := parseStartOffset(tc.in)
		if err != nil || got.EpochOffset() != tc.want.EpochOffset() {
			t.Errorf("parseStartOffset(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"-1", "x", ""} {
		if _, err := parseStartOffset(bad); err == nil {
			t.Errorf("parseStartOffset(%q): want an error", bad)
		}
	}
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"0", "1700000000123", "2023-11-14T22:13:20Z", "2023-11-14T23:13:20.5+01:00", "x", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseTimestamp(s)
		if err != nil {
			return
		}
		if ms < 0 {
			t.Fatalf("parseTimestamp(%q) = %d, accepted a negative time", s, ms)
		}
		// Whatever was accepted must name a representable instant.
		if got := time.UnixMilli(ms).UnixMilli(); got != ms {
			t.Fatalf("parseTimestamp(%q) = %d does not round-trip", s, ms)
		}
	})
}
