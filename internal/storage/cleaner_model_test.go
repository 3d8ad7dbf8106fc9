package storage

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// writtenRecord is what the model test appended at one offset.
type writtenRecord struct {
	key   string
	value []byte
	ts    int64
	hdrs  int
}

// TestCleanerModel appends random keyed records and tombstones (several
// codecs, idempotent producers), rolls, cleans with random map budgets and
// moves a fake clock, comparing the log with a map after every pass. The
// seed is logged; STORAGE_CLEANER_SEED replays one.
func TestCleanerModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(envOr("STORAGE_CLEANER_SEED", ""), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STORAGE_CLEANER_SEED to replay)", seed)
	rng := rand.New(rand.NewSource(seed))
	for run := range 4 {
		runCleanerModel(t, rng, run, newFileCache(DefaultMaxOpenFiles()))
	}
}

// TestCleanerModelTinyFileCache is TestCleanerModel with one segment
// descriptor: a pass reads segments and writes its .cleaned file beside
// them, so the cache goes over capacity while both are in use, and the
// swap renames files whose descriptors come and go.
func TestCleanerModelTinyFileCache(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(envOr("STORAGE_CLEANER_SEED", ""), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STORAGE_CLEANER_SEED to replay)", seed)
	rng := rand.New(rand.NewSource(seed))
	files := newFileCache(1)
	for run := range 2 {
		runCleanerModel(t, rng, run, files)
		if n := files.Open(); n > 1 {
			t.Fatalf("run %d: %d segment files open with nothing in use, capacity 1", run, n)
		}
	}
	if files.evictions.Load() == 0 {
		t.Fatal("no descriptor was ever evicted")
	}
}

func runCleanerModel(t *testing.T, rng *rand.Rand, run int, files *fileCache) {
	cfg := compactConfig()
	cfg.SegmentBytes = int64(1024 + rng.Intn(4096))
	cfg.IndexIntervalBytes = 64 + rng.Intn(512)
	cfg.DeleteRetentionMs = 1000
	l := openLogFiles(t, t.TempDir(), cfg, files)
	// LZ4 is left to TestCleanerCodecs: its 4 MiB block buffers make it
	// very slow under -race.
	codecs := []recordbatch.Compression{recordbatch.CompressionNone, recordbatch.CompressionGzip,
		recordbatch.CompressionSnappy, recordbatch.CompressionZstd}
	model := map[string]string{}
	written := map[int64]writtenRecord{}
	batches := map[int64]recordbatch.Header{}
	lastOfProducer := map[int64]int64{}
	seqs := map[int64]int32{}
	now := int64(1_700_000_000_000)
	numKeys := 10 + rng.Intn(60)
	passes := 0

	for step := range 300 {
		what := fmt.Sprintf("run %d step %d", run, step)
		switch p := rng.Intn(100); {
		case p < 78:
			n := 1 + rng.Intn(6)
			recs := make([]kv, n)
			for i := range recs {
				k := "key-" + strconv.Itoa(rng.Intn(numKeys))
				recs[i] = kv{key: k, value: fmt.Sprintf("%s@%d/%d", k, step, i), tomb: rng.Intn(100) < 15}
			}
			o := batchOpts{ts: now, codec: codecs[rng.Intn(len(codecs))], pid: int64(rng.Intn(4))}
			if o.pid > 0 {
				o.seq = seqs[o.pid]
				seqs[o.pid] += int32(n)
			}
			info, stored := mustAppend(t, l, keyedBatch(t, o, recs...), int32(run))
			h, err := recordbatch.ParseHeader(stored)
			if err != nil {
				t.Fatal(err)
			}
			batches[info.FirstOffset] = h
			if o.pid > 0 {
				lastOfProducer[o.pid] = info.FirstOffset
			}
			for i, r := range recs {
				w := writtenRecord{key: r.key, ts: now + int64(i), hdrs: map[bool]int{true: 1}[i%3 == 1]}
				if r.tomb {
					delete(model, r.key)
				} else {
					model[r.key] = r.value
					w.value = []byte(r.value)
				}
				written[info.FirstOffset+int64(i)] = w
			}
			now += int64(rng.Intn(50))
		case p < 86:
			forceRoll(t, l)
		case p < 96:
			act := l.active()
			actBase, actBytes := act.base, segmentBytes(t, l)[act.base]
			budget := int64(0)
			if rng.Intn(3) == 0 {
				budget = int64(500 + rng.Intn(3000)) // forces partial offset maps
			}
			st, err := l.Clean(context.Background(), CleanOptions{Now: time.UnixMilli(now), DedupeBufferBytes: budget})
			if err != nil {
				t.Fatalf("%s: Clean: %v", what, err)
			}
			passes++
			if st.RecordsKept > st.RecordsRead || st.End < st.FirstDirty || l.CleanerCheckpoint() != st.End {
				t.Fatalf("%s: inconsistent stats %+v, checkpoint %d", what, st, l.CleanerCheckpoint())
			}
			if a := l.active(); a.base != actBase || !bytes.Equal(segmentBytes(t, l)[actBase], actBytes) {
				t.Fatalf("%s: the active segment changed", what)
			}
			checkCleanedLog(t, l, model, written, batches, what)
		default:
			now += cfg.DeleteRetentionMs/2 + rng.Int63n(2*cfg.DeleteRetentionMs)
		}
	}

	// Clean everything twice, a delete retention apart: the first pass
	// stamps delete horizons, the second removes every tombstone.
	forceRoll(t, l)
	for range 2 {
		if _, err := l.Clean(context.Background(), CleanOptions{Now: time.UnixMilli(now)}); err != nil {
			t.Fatal(err)
		}
		now += cfg.DeleteRetentionMs + 1
	}
	what := fmt.Sprintf("run %d final", run)
	recs := checkCleanedLog(t, l, model, written, batches, what)
	for _, r := range recs {
		if r.value == nil {
			t.Fatalf("%s: tombstone for %q at %d survived delete.retention.ms", what, r.key, r.offset)
		}
	}
	if len(recs) != len(model) {
		t.Fatalf("%s: %d records left for %d live keys", what, len(recs), len(model))
	}
	_, hdrs := allRecords(t, l)
	for pid, base := range lastOfProducer {
		found := false
		for _, h := range hdrs {
			if h.BaseOffset == base {
				found = h.ProducerID == pid && h.BaseSequence == batches[base].BaseSequence &&
					h.LastOffsetDelta == batches[base].LastOffsetDelta && h.ProducerEpoch == batches[base].ProducerEpoch
			}
		}
		if !found {
			t.Fatalf("%s: last batch %d of producer %d lost or altered", what, base, pid)
		}
	}
	t.Logf("run %d: %d passes, %d keys live, %d records of %d kept, %d segments", run, passes, len(model), len(recs), len(written), l.NumSegments())
}

// checkCleanedLog checks the log against the model and what was written:
// it replays to the model; every record is the one written at its offset
// (key, value, timestamp, headers); every batch keeps its original offsets
// and producer fields; and below the cleaner checkpoint no key repeats.
func checkCleanedLog(t *testing.T, l *Log, model map[string]string, written map[int64]writtenRecord,
	batches map[int64]recordbatch.Header, what string) []logRecord {
	t.Helper()
	recs := checkState(t, l, model, what)
	for _, r := range recs {
		w, ok := written[r.offset]
		if !ok || w.key != r.key || !bytes.Equal(w.value, r.value) || (w.value == nil) != (r.value == nil) || w.ts != r.ts || w.hdrs != r.hdrs {
			t.Fatalf("%s: record at %d is %+v, was written as %+v", what, r.offset, r, w)
		}
	}
	_, hdrs := allRecords(t, l)
	for _, h := range hdrs {
		o, ok := batches[h.BaseOffset]
		if !ok || o.LastOffsetDelta != h.LastOffsetDelta || o.ProducerID != h.ProducerID ||
			o.ProducerEpoch != h.ProducerEpoch || o.BaseSequence != h.BaseSequence || o.PartitionLeaderEpoch != h.PartitionLeaderEpoch {
			t.Fatalf("%s: batch at %d is %+v, was %+v", what, h.BaseOffset, h, o)
		}
		if h.RecordCount > 0 && h.Compression() != o.Compression() {
			t.Fatalf("%s: batch at %d changed codec %d -> %d", what, h.BaseOffset, o.Compression(), h.Compression())
		}
	}
	seen := map[string]int64{}
	cp := l.CleanerCheckpoint()
	for _, r := range recs {
		if r.offset >= cp {
			break
		}
		if prev, dup := seen[r.key]; dup {
			t.Fatalf("%s: key %q at %d and %d, both below the cleaner checkpoint %d", what, r.key, prev, r.offset, cp)
		}
		seen[r.key] = r.offset
	}
	return recs
}
