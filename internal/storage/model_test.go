package storage

import (
	"bytes"
	"errors"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// logModel is the in-memory truth the model test compares the log with:
// the batches with last offset >= log start, in order.
type logModel struct {
	batches []storedBatch
	start   int64
	end     int64
}

func (m *logModel) truncate(off int64) {
	for i, b := range m.batches {
		if b.last >= off {
			m.end = b.base
			m.batches = m.batches[:i]
			break
		}
	}
	m.start = min(m.start, m.end)
}

func (m *logModel) dropBelow(start int64) {
	m.start = start
	i := 0
	for i < len(m.batches) && m.batches[i].last < start {
		i++
	}
	m.batches = m.batches[i:]
}

// TestModel runs random operations against a log with tiny segments and
// an in-memory model, comparing every read. The seed is logged.
func TestModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(envOr("STORAGE_MODEL_SEED", ""), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STORAGE_MODEL_SEED to replay)", seed)
	rng := rand.New(rand.NewSource(seed))
	for run := range 3 {
		runModel(t, rng, run, newFileCache(DefaultMaxOpenFiles()))
	}
}

// TestModelTinyFileCache is TestModel with one segment descriptor for
// the log and its reopened successors: every access to another segment
// evicts, and flushes and rolls fsync files reopened for the purpose.
func TestModelTinyFileCache(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(envOr("STORAGE_MODEL_SEED", ""), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (STORAGE_MODEL_SEED to replay)", seed)
	rng := rand.New(rand.NewSource(seed))
	files := newFileCache(1)
	for run := range 3 {
		runModel(t, rng, run, files)
		if n := files.Open(); n != 0 {
			t.Fatalf("run %d: %d segment files still open after the log closed", run, n)
		}
	}
	if files.evictions.Load() == 0 {
		t.Fatal("no descriptor was ever evicted")
	}
}

func runModel(t *testing.T, rng *rand.Rand, run int, files *fileCache) {
	cfg := testConfig()
	cfg.SegmentBytes = int64(1024 + rng.Intn(3*1024))
	cfg.IndexIntervalBytes = 64 + rng.Intn(512)
	cfg.SegmentIndexBytes = 8 * (4 + rng.Intn(64))
	dir := t.TempDir()
	l, err := openLogWithFiles(dir, cfg, 0, 0, true, quietLogger(), files)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	m := &logModel{}
	epoch := int32(0)
	ts := int64(1000)
	check := func(step int, op string) {
		t.Helper()
		if l.LogEndOffset() != m.end || l.LogStartOffset() != m.start {
			t.Fatalf("run %d step %d after %s: log [%d,%d) model [%d,%d)", run, step, op,
				l.LogStartOffset(), l.LogEndOffset(), m.start, m.end)
		}
		checkModelReads(t, rng, l, m, run, step, op)
	}
	for step := range 400 {
		var op string
		switch p := rng.Intn(100); {
		case p < 55:
			op = "append"
			if rng.Intn(10) == 0 {
				epoch++
			}
			var set []byte
			for range 1 + rng.Intn(3) {
				ts += int64(rng.Intn(5))
				set = append(set, makeBatch(t, 1+rng.Intn(8), 1+rng.Intn(120), ts, "m")...)
			}
			info, err := l.Append(set, epoch)
			if int64(len(set)) > cfg.SegmentBytes {
				if !errors.Is(err, ErrRecordListTooLarge) {
					t.Fatalf("oversized set: %v", err)
				}
				break
			}
			if err != nil {
				t.Fatalf("run %d step %d: append: %v", run, step, err)
			}
			if info.FirstOffset != m.end {
				t.Fatalf("append at %d, model end %d", info.FirstOffset, m.end)
			}
			for _, b := range splitBatches(t, set) {
				m.batches = append(m.batches, b)
			}
			m.end = info.LastOffset + 1
		case p < 65:
			op = "truncate"
			if m.end > m.start {
				off := m.start + 1 + rng.Int63n(m.end-m.start)
				if err := l.TruncateTo(off); err != nil {
					t.Fatalf("truncate %d: %v", off, err)
				}
				m.truncate(off)
			}
		case p < 72:
			op = "delete-records"
			off := m.start + rng.Int63n(m.end-m.start+1)
			got, err := l.DeleteRecordsBefore(off)
			if err != nil || got != max(off, m.start) {
				t.Fatalf("DeleteRecordsBefore(%d) = %d, %v", off, got, err)
			}
			m.dropBelow(got)
		case p < 78:
			op = "retention"
			c := cfg
			c.RetentionBytes = rng.Int63n(4 * cfg.SegmentBytes)
			c.RetentionMs = -1
			l.SetConfig(c)
			if _, err := l.EnforceRetention(time.Now()); err != nil {
				t.Fatal(err)
			}
			l.SetConfig(cfg)
			if s := l.LogStartOffset(); s < m.start {
				t.Fatalf("retention moved start back: %d < %d", s, m.start)
			} else {
				m.dropBelow(s)
			}
		case p < 82:
			op = "flush"
			if err := l.Flush(); err != nil || l.RecoveryPoint() != m.end {
				t.Fatalf("flush: %v, RP %d", err, l.RecoveryPoint())
			}
		case p < 91:
			op = "reopen"
			rp, start := l.RecoveryPoint(), l.LogStartOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if l, err = openLogWithFiles(dir, cfg, rp, start, true, quietLogger(), files); err != nil {
				t.Fatalf("clean reopen: %v", err)
			}
		default:
			op = "crash-reopen"
			rp, start := l.RecoveryPoint(), l.LogStartOffset()
			if err := l.crash(); err != nil {
				t.Fatal(err)
			}
			if l, err = openLogWithFiles(dir, cfg, rp, start, false, quietLogger(), files); err != nil {
				t.Fatalf("crash reopen: %v", err)
			}
		}
		check(step, op)
	}
}

// checkModelReads compares reads at random offsets (and every batch
// boundary once in a while) with the model.
func checkModelReads(t *testing.T, rng *rand.Rand, l *Log, m *logModel, run, step int, op string) {
	t.Helper()
	if m.end == m.start {
		if r, err := l.Read(m.start, 100, -1); err != nil || r.Len != 0 {
			t.Fatalf("empty log read: %+v %v", r, err)
		}
		return
	}
	for range 8 {
		off := m.start + rng.Int63n(m.end-m.start)
		maxBytes := 1 + rng.Intn(3000)
		hw := int64(-1)
		if rng.Intn(3) == 0 {
			hw = off + rng.Int63n(m.end-off+1)
		}
		r, err := l.Read(off, maxBytes, hw)
		if err != nil {
			t.Fatalf("run %d step %d after %s: Read(%d): %v", run, step, op, off, err)
		}
		i := 0
		for m.batches[i].last < off {
			i++
		}
		if hw >= 0 && (off >= hw || m.batches[i].base >= hw) {
			if r.Len != 0 {
				t.Fatalf("read past high watermark %d", hw)
			}
			continue
		}
		b, err := r.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		got := splitBatches(t, b)
		if len(got) == 0 || (len(got) > 1 && len(b) > maxBytes) {
			t.Fatalf("run %d step %d after %s: Read(%d,%d,hw %d): %d batches, %d bytes; model [%d,%d)", run, step, op, off, maxBytes, hw, len(got), len(b), m.start, m.end)
		}
		for k, g := range got {
			if i+k >= len(m.batches) || !bytes.Equal(g.data, m.batches[i+k].data) {
				t.Fatalf("run %d step %d after %s: Read(%d) batch %d differs from model", run, step, op, off, k)
			}
			if hw >= 0 && g.base >= hw {
				t.Fatalf("batch at %d past high watermark %d", g.base, hw)
			}
		}
	}
	if rng.Intn(10) == 0 {
		all := readAll(t, l, m.start)
		if len(all) != len(m.batches) {
			t.Fatalf("run %d step %d after %s: %d batches, model %d", run, step, op, len(all), len(m.batches))
		}
		for i := range all {
			if !bytes.Equal(all[i].data, m.batches[i].data) {
				t.Fatalf("batch %d differs", i)
			}
		}
	}
	_ = recordbatch.HeaderSize
}
