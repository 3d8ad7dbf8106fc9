package storage

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// kv is one keyed record for the cleaner tests; a nil value is a tombstone.
type kv struct {
	key, value string
	tomb       bool
}

// compactConfig is a compacted log with small segments, cleaned whatever
// its dirty ratio.
func compactConfig() Config {
	c := testConfig()
	c.Compact = true
	c.SegmentBytes = 1 << 20
	c.IndexIntervalBytes = 256
	c.DeleteRetentionMs = 1000
	c.MinCleanableDirtyRatio = 0
	c.RetentionMs = -1
	return c
}

// batchOpts describes how a keyed test batch is built.
type batchOpts struct {
	ts         int64
	codec      recordbatch.Compression
	pid        int64 // 0 for none
	seq        int32
	logAppend  bool
	txn        bool
	timestamps []int64 // per record, relative to ts (default: i)
}

// keyedBatch builds a batch of keyed records.
func keyedBatch(t testing.TB, o batchOpts, recs ...kv) []byte {
	t.Helper()
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{TimestampDelta: int64(i), Key: []byte(r.key)}
		if o.timestamps != nil {
			rs[i].TimestampDelta = o.timestamps[i]
		}
		if !r.tomb {
			rs[i].Value = []byte(r.value)
		}
		if i%3 == 1 {
			rs[i].Headers = []recordbatch.RecordHeader{{Key: "h", Value: []byte(r.key)}}
		}
	}
	opts := recordbatch.BuildOptions{BaseTimestamp: o.ts, Compression: o.codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LogAppendTime: o.logAppend}
	if o.pid > 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = o.pid, 1, o.seq, o.txn
	}
	b, err := recordbatch.Build(opts, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logRecord is one record read back with its absolute offset and time.
type logRecord struct {
	offset int64
	ts     int64
	key    string
	value  []byte // nil: tombstone
	hdrs   int
}

// allRecords reads the whole log through Read, checking CRCs and that
// offsets strictly increase, and returns every record and batch header.
func allRecords(t testing.TB, l *Log) ([]logRecord, []recordbatch.Header) {
	t.Helper()
	var recs []logRecord
	var hdrs []recordbatch.Header
	prev := int64(-1)
	for _, sb := range readAll(t, l, l.LogStartOffset()) {
		h, err := recordbatch.ParseHeader(sb.data)
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset <= prev {
			t.Fatalf("batch at %d after offset %d", h.BaseOffset, prev)
		}
		hdrs = append(hdrs, h)
		rs, err := recordbatch.Records(sb.data)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range rs {
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off <= prev || off > h.LastOffset() {
				t.Fatalf("record offset %d after %d (batch %d..%d)", off, prev, h.BaseOffset, h.LastOffset())
			}
			prev = off
			ts := h.BaseTimestamp + r.TimestampDelta
			if h.LogAppendTime() {
				ts = h.MaxTimestamp
			}
			recs = append(recs, logRecord{offset: off, ts: ts, key: string(r.Key), value: bytes.Clone(r.Value), hdrs: len(r.Headers)})
		}
		prev = h.LastOffset()
	}
	return recs, hdrs
}

// applyRecords folds records into a key -> value map the way a consumer
// of a compacted topic does.
func applyRecords(recs []logRecord) map[string]string {
	m := make(map[string]string)
	for _, r := range recs {
		if r.value == nil {
			delete(m, r.key)
		} else {
			m[r.key] = string(r.value)
		}
	}
	return m
}

// checkState insists the log replays to want.
func checkState(t testing.TB, l *Log, want map[string]string, what string) []logRecord {
	t.Helper()
	recs, _ := allRecords(t, l)
	if got := applyRecords(recs); !maps.Equal(got, want) {
		t.Fatalf("%s: log replays to %d keys, model has %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	return recs
}

// forceRoll starts a new active segment (a test's stand-in for time rolls).
func forceRoll(t testing.TB, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active().size.Load() == 0 {
		return
	}
	if _, err := l.rollLocked(l.config()); err != nil {
		t.Fatal(err)
	}
}

// segmentBytes returns the bytes of every segment file, by base offset.
func segmentBytes(t testing.TB, l *Log) map[int64][]byte {
	t.Helper()
	out := make(map[int64][]byte)
	for _, s := range l.segments() {
		b, err := ReadResult{file: s.file, Len: s.size.Load()}.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out[s.base] = b
	}
	return out
}

// leftovers lists files of unfinished cleaner work in dir.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		for _, suf := range []string{cleanedSuffix, swapSuffix, deletedSuffix} {
			if strings.HasSuffix(e.Name(), suf) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// copyDir copies a flat partition directory.
func copyDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
