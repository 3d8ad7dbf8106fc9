package faults

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// TestTornTailIsCut appends half a batch (and, separately, garbage) to the
// active segment of a killed broker: the restart cuts exactly the damaged
// tail, keeps every earlier record and appends at the old end.
func TestTornTailIsCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail func(t *testing.T, next int64) []byte
	}{
		{"half a batch", func(t *testing.T, next int64) []byte {
			batch := buildBatch(t, 10, 100)
			recordbatch.SetBaseOffset(batch, next)
			return batch[:len(batch)/2]
		}},
		{"garbage", func(t *testing.T, next int64) []byte {
			return bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 100)
		}},
		{"header claiming a huge batch", func(t *testing.T, next int64) []byte {
			batch := buildBatch(t, 1, 10)
			recordbatch.SetBaseOffset(batch, next)
			copy(batch[8:12], []byte{0x7f, 0xff, 0xff, 0xff})
			return batch
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := harness.StartBroker(t)
			const topic = "torn"
			createTopic(t, b, topic, 1, nil)
			want := produceBatches(t, b, topic, 20, 10)
			b.Kill()

			seg := lastFile(t, filepath.Join(b.Dir, topic+"-0"), ".log")
			appendFile(t, seg, tc.tail(t, 200))

			before := len(b.Output())
			b.Restart()
			assertLogged(t, b, before, "recovery truncated segment", filepath.Base(seg))
			assertStored(t, b, topic, want)
			assertAppendsAt(t, b, topic, 200)
		})
	}
}

// TestFlippedByteInLastBatch corrupts the last batch of a killed broker's
// active segment: the restart drops that batch only.
func TestFlippedByteInLastBatch(t *testing.T) {
	b := harness.StartBroker(t)
	const topic = "flipped"
	createTopic(t, b, topic, 1, nil)
	want := produceBatches(t, b, topic, 20, 10)
	b.Kill()

	seg := lastFile(t, filepath.Join(b.Dir, topic+"-0"), ".log")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	var last recordbatch.Header
	lastPos := -1
	if err := recordbatch.Split(data, func(batch []byte, h recordbatch.Header) error {
		last, lastPos = h, len(data)-len(batch)
		return nil
	}); err != nil {
		t.Fatalf("the segment was damaged before the test touched it: %v", err)
	}
	// Split hands out the batches in order; the position of the last
	// one is what remains when it ends the file.
	if lastPos < 0 || int64(lastPos)+last.Size() != int64(len(data)) {
		t.Fatalf("last batch at %d of size %d does not end the %d-byte segment", lastPos, last.Size(), len(data))
	}
	data[len(data)-3] ^= 0x01 // inside the records: only the CRC notices
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}

	before := len(b.Output())
	b.Restart()
	assertLogged(t, b, before, "recovery truncated segment", filepath.Base(seg))
	for off := last.BaseOffset; off <= last.LastOffset(); off++ {
		delete(want[0], off)
	}
	assertStored(t, b, topic, want)
	assertAppendsAt(t, b, topic, last.BaseOffset)
}

// TestIndexRebuilt removes or truncates .index files of a real partition
// with several segments; the restart rebuilds them and every offset,
// including ones in the middle of old segments, reads correctly.
func TestIndexRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(b *harness.Broker)
		hurt  func(t *testing.T, indexes []string)
		// logs: after a clean stop the files are trusted, so a rebuild
		// is an event worth a line; after a kill every segment past
		// the recovery point is re-indexed anyway.
		logs bool
	}{
		{"deleted after clean stop", (*harness.Broker).Stop, func(t *testing.T, idx []string) {
			for _, f := range idx {
				removeFile(t, f)
			}
		}, true},
		{"truncated after clean stop", (*harness.Broker).Stop, func(t *testing.T, idx []string) {
			for _, f := range idx {
				truncateFile(t, f, 13) // one entry and a torn second
			}
		}, true},
		{"deleted and truncated after kill", (*harness.Broker).Kill, func(t *testing.T, idx []string) {
			removeFile(t, idx[0])
			truncateFile(t, idx[len(idx)-1], 5)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := harness.StartBroker(t, "log.segment.bytes=262144")
			const topic = "indexed"
			createTopic(t, b, topic, 1, nil)
			want := produceBatches(t, b, topic, 60, 10, 1000)
			dir := filepath.Join(b.Dir, topic+"-0")
			tc.crash(b)

			indexes := filesWithExt(t, dir, ".index")
			if len(indexes) < 2 {
				t.Fatalf("want several segments, found indexes %v", indexes)
			}
			tc.hurt(t, indexes)

			before := len(b.Output())
			b.Restart()
			if tc.logs {
				assertLogged(t, b, before, "rebuilt indexes")
			}
			assertStored(t, b, topic, want)
			for _, off := range []int64{1, 137, 301, 455, 599} {
				got := consumeFrom(t, b, topic, 0, off, 1)[0]
				if got.Offset != off || string(got.Value) != want[0][off] {
					t.Fatalf("read at %d: offset %d %.20q, want %.20q", off, got.Offset, got.Value, want[0][off])
				}
			}
			// Indexes live in memory and are written out at close, so
			// the rebuilt files are checked after a clean stop.
			b.Stop()
			for _, f := range indexes[:len(indexes)-1] {
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatalf("index after restart and stop: %v", err)
				}
				if fi.Size() == 0 || fi.Size()%8 != 0 {
					t.Errorf("index %s after restart and stop: %d bytes, want a rebuilt file of whole 8-byte entries", f, fi.Size())
				}
			}
			b.Restart()
			assertAppendsAt(t, b, topic, 600)
		})
	}
}

// produceBatches produces n batches of per records each (one ProduceSync
// per batch, uncompressed), values padded to size bytes if given.
func produceBatches(t *testing.T, b *harness.Broker, topic string, n, per int, size ...int) map[int32]map[int64]string {
	t.Helper()
	cl := b.Client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := harness.Ctx(t, 2*opTimeout)
	want := map[int32]map[int64]string{0: {}}
	for i := range n {
		recs := make([]*kgo.Record, per)
		for j := range recs {
			v := fmt.Sprintf("%s-%04d-%02d-", topic, i, j)
			if len(size) > 0 {
				v += strings.Repeat("x", max(0, size[0]-len(v)))
			}
			recs[j] = &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce batch %d: %v", i, err)
		}
		for _, r := range recs {
			want[0][r.Offset] = string(r.Value)
		}
	}
	if len(want[0]) != n*per {
		t.Fatalf("produced %d distinct offsets, want %d", len(want[0]), n*per)
	}
	return want
}

// assertAppendsAt produces one record and checks the offset it gets.
func assertAppendsAt(t *testing.T, b *harness.Broker, topic string, want int64) {
	t.Helper()
	r, err := b.Client().ProduceSync(harness.Ctx(t, opTimeout), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after")}).First()
	if err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	if r.Offset != want {
		t.Fatalf("first record after restart got offset %d, want %d", r.Offset, want)
	}
}

// assertLogged checks that the broker's log since byte from says all of
// what (in one line).
func assertLogged(t *testing.T, b *harness.Broker, from int, what ...string) {
	t.Helper()
	for _, line := range strings.Split(b.Output()[from:], "\n") {
		if containsAll(line, what) {
			return
		}
	}
	t.Fatalf("broker did not log a line with %q after restart:\n%s", what, b.Output()[from:])
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// filesWithExt lists a partition dir's files with the extension, sorted
// (20-digit names sort by base offset).
func filesWithExt(t *testing.T, dir, ext string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ext {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out
}

func lastFile(t *testing.T, dir, ext string) string {
	t.Helper()
	files := filesWithExt(t, dir, ext)
	if len(files) == 0 {
		t.Fatalf("no %s file in %s", ext, dir)
	}
	return files[len(files)-1]
}

func appendFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func truncateFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}
