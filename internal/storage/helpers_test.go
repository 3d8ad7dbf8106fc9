package storage

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// quietLogger discards logs; set STORAGE_TEST_LOG=1 to see them? Tests
// that assert on logs use their own handler.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is Kafka's defaults with immediate file deletion.
func testConfig() Config {
	c := DefaultConfig()
	c.FileDeleteDelayMs = 0
	return c
}

func openLog(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	return openLogFiles(t, dir, cfg, newFileCache(DefaultMaxOpenFiles()))
}

// openLogFiles is openLog with the descriptor cache to use (shared by
// the caller's logs, or tiny to force evictions).
func openLogFiles(t testing.TB, dir string, cfg Config, files *fileCache) *Log {
	t.Helper()
	l, err := openLogWithFiles(dir, cfg, 0, 0, true, quietLogger(), files)
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// makeBatch builds one uncompressed batch of n records of valSize bytes,
// record i timestamped ts+i and tagged with tag so contents are checkable.
func makeBatch(t testing.TB, n, valSize int, ts int64, tag string) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valSize)
		copy(v, fmt.Sprintf("%s/%d", tag, i))
		recs[i] = recordbatch.Record{TimestampDelta: int64(i), Key: []byte(tag), Value: v}
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return b
}

// storedBatch is one batch as read back from the log.
type storedBatch struct {
	base, last int64
	data       []byte
}

// readAll reads every batch from offset from to the log end.
func readAll(t testing.TB, l *Log, from int64) []storedBatch {
	t.Helper()
	var out []storedBatch
	for off := from; off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, -1)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if r.Len == 0 {
			t.Fatalf("Read(%d) empty below log end %d", off, l.LogEndOffset())
		}
		b, err := r.Bytes()
		if err != nil {
			t.Fatalf("Bytes: %v", err)
		}
		bs := splitBatches(t, b)
		out = append(out, bs...)
		off = bs[len(bs)-1].last + 1
	}
	return out
}

// splitBatches splits read bytes into batches, checking each CRC.
func splitBatches(t testing.TB, b []byte) []storedBatch {
	t.Helper()
	var out []storedBatch
	err := recordbatch.Split(b, func(batch []byte, h recordbatch.Header) error {
		if err := recordbatch.CheckCRC(batch); err != nil {
			return err
		}
		out = append(out, storedBatch{base: h.BaseOffset, last: h.LastOffset(), data: bytes.Clone(batch)})
		return nil
	})
	if err != nil {
		t.Fatalf("split read bytes: %v", err)
	}
	return out
}

// mustAppend appends a copy of b and returns the info and the stored bytes.
func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) (AppendInfo, []byte) {
	t.Helper()
	c := bytes.Clone(b)
	info, err := l.Append(c, epoch)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return info, c
}

// envOr returns the environment variable or def.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// crash stops the log as a kill would: the roll flusher stops (after the
// flush it is doing, if any), the descriptors close, and nothing is
// sealed, flushed or checkpointed.
func (l *Log) crash() error {
	l.stopRollFlusher()
	return l.closeSegments()
}

// waitRollFlushed waits until the log's roll flusher has nothing left to
// do: the recovery point is then at the latest roll's base, unless a
// flush failed or a truncation lowered it.
func waitRollFlushed(t testing.TB, l *Log) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		busy := l.flushing
		l.mu.Unlock()
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("roll flush of %s still running after 30s", l.dir)
		}
		time.Sleep(time.Millisecond)
	}
}
