package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func openOffset(t *testing.T, path string, base int64, maxBytes int) *OffsetIndex {
	t.Helper()
	x, err := OpenOffsetIndex(path, base, maxBytes)
	if err != nil {
		t.Fatalf("OpenOffsetIndex: %v", err)
	}
	return x
}

// offsetFile encodes (relative offset, position) pairs as Kafka writes them.
func offsetFile(pairs ...int32) []byte {
	var b []byte
	for _, v := range pairs {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func TestOffsetIndexCreatesEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000100.index")
	x := openOffset(t, path, 100, 1024)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("new index file: %v, %v", fi, err)
	}
	if o, p := x.Lookup(150); o != 100 || p != 0 {
		t.Fatalf("Lookup on empty = (%d, %d), want (100, 0)", o, p)
	}
	if o, p := x.LastEntry(); o != 100 || p != 0 {
		t.Fatalf("LastEntry on empty = (%d, %d)", o, p)
	}
	if x.Len() != 0 || x.Full() || x.BaseOffset() != 100 || x.Path() != path {
		t.Fatalf("Len %d Full %v Base %d Path %s", x.Len(), x.Full(), x.BaseOffset(), x.Path())
	}
}

func TestOffsetIndexLookupBoundaries(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "a.index"), 1000, 1024)
	for _, e := range [][2]int64{{1000, 0}, {1010, 4096}, {1020, 8200}, {1050, 20000}} {
		if err := x.Append(e[0], e[1]); err != nil {
			t.Fatalf("Append%v: %v", e, err)
		}
	}
	for _, tc := range []struct{ in, off, pos int64 }{
		{0, 1000, 0}, {999, 1000, 0}, {1000, 1000, 0}, {1009, 1000, 0},
		{1010, 1010, 4096}, {1011, 1010, 4096}, {1019, 1010, 4096}, {1020, 1020, 8200},
		{1049, 1020, 8200}, {1050, 1050, 20000}, {1 << 50, 1050, 20000},
	} {
		if o, p := x.Lookup(tc.in); o != tc.off || p != tc.pos {
			t.Errorf("Lookup(%d) = (%d, %d), want (%d, %d)", tc.in, o, p, tc.off, tc.pos)
		}
	}
	if o, p := x.LastEntry(); o != 1050 || p != 20000 {
		t.Fatalf("LastEntry = (%d, %d)", o, p)
	}
}

func TestOffsetIndexLookupNoEntryAtBase(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "a.index"), 500, 1024)
	if err := x.Append(510, 100); err != nil {
		t.Fatal(err)
	}
	if o, p := x.Lookup(505); o != 500 || p != 0 {
		t.Fatalf("Lookup before first entry = (%d, %d), want (500, 0)", o, p)
	}
}

func TestOffsetIndexAppendRules(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "a.index"), 100, 3*8+7)
	must := func(off, pos int64) {
		t.Helper()
		if err := x.Append(off, pos); err != nil {
			t.Fatalf("Append(%d, %d): %v", off, pos, err)
		}
	}
	must(105, 10)
	for _, bad := range [][2]int64{
		{105, 20},         // offset not increasing
		{104, 20},         // offset decreasing
		{106, 9},          // position decreasing
		{99, 20},          // below base
		{100 + 1<<31, 20}, // relative offset overflows int32
		{106, 1 << 31},    // position overflows int32
		{106, -1},         // negative position
	} {
		if err := x.Append(bad[0], bad[1]); err == nil || errors.Is(err, ErrFull) {
			t.Errorf("Append%v = %v, want a rule error", bad, err)
		}
	}
	must(106, 10) // equal position is allowed: several batches may share one
	must(200, 50)
	if !x.Full() || x.Len() != 3 {
		t.Fatalf("Full %v Len %d: maxBytes 31 allows 3 entries", x.Full(), x.Len())
	}
	if err := x.Append(300, 60); !errors.Is(err, ErrFull) {
		t.Fatalf("Append on full = %v, want ErrFull", err)
	}
}

func TestOffsetIndexFileFormatAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000042.index")
	x := openOffset(t, path, 42, 1<<20)
	for i := int64(1); i <= 3; i++ {
		if err := x.Append(42+i*10, i*4100); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	want := offsetFile(10, 4100, 20, 8200, 30, 12300)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("file\n got %x\nwant %x", got, want)
	}
	if err := x.Append(100, 20000); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	y := openOffset(t, path, 42, 1<<20)
	if y.Len() != 4 {
		t.Fatalf("reopened Len %d", y.Len())
	}
	if o, p := y.Lookup(75); o != 72 || p != 12300 {
		t.Fatalf("reopened Lookup(75) = (%d, %d)", o, p)
	}
	if o, p := y.LastEntry(); o != 100 || p != 20000 {
		t.Fatalf("reopened LastEntry = (%d, %d)", o, p)
	}
}

func TestOffsetIndexReadsKafkaFile(t *testing.T) {
	// Bytes as Kafka leaves them after a clean shutdown (trimmed, big-endian).
	path := filepath.Join(t.TempDir(), "00000000000000001000.index")
	if err := os.WriteFile(path, offsetFile(3, 4134, 7, 8290, 12, 12440), 0o644); err != nil {
		t.Fatal(err)
	}
	x := openOffset(t, path, 1000, 10<<20)
	if o, p := x.Lookup(1008); o != 1007 || p != 8290 {
		t.Fatalf("Lookup(1008) = (%d, %d)", o, p)
	}
}

func TestOffsetIndexTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.index")
	x := openOffset(t, path, 0, 1024)
	for i := int64(1); i <= 5; i++ {
		if err := x.Append(i*10, i*100); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	x.TruncateTo(60) // beyond the last entry: nothing goes
	if x.Len() != 5 {
		t.Fatalf("TruncateTo(60): Len %d", x.Len())
	}
	x.TruncateTo(30) // drops 30, 40, 50
	if o, _ := x.LastEntry(); x.Len() != 2 || o != 20 {
		t.Fatalf("TruncateTo(30): Len %d last %d", x.Len(), o)
	}
	x.TruncateTo(25) // between entries: nothing more goes
	if x.Len() != 2 {
		t.Fatalf("TruncateTo(25): Len %d", x.Len())
	}
	// The file follows: trimmed on flush, and appends overwrite the tail.
	if err := x.Append(21, 250); err != nil {
		t.Fatalf("Append after truncate: %v", err)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	want := offsetFile(10, 100, 20, 200, 21, 250)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("file after truncate\n got %x\nwant %x", got, want)
	}
	x.Reset()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("file after Reset+Close is %d bytes", fi.Size())
	}
}

func TestOffsetIndexRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.index")
	x := openOffset(t, path, 0, 1024)
	if err := x.Append(5, 50); err != nil {
		t.Fatal(err)
	}
	newPath := path + ".deleted"
	if err := x.Rename(newPath); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old path still there: %v", err)
	}
	if got, _ := os.ReadFile(newPath); !bytes.Equal(got, offsetFile(5, 50)) || x.Path() != newPath {
		t.Fatalf("renamed file %x, Path %s", got, x.Path())
	}
	// A deleted file is not resurrected by Close.
	if err := os.Remove(newPath); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatalf("Close after delete: %v", err)
	}
	if _, err := os.Stat(newPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close recreated the file: %v", err)
	}
}

func TestOffsetIndexCorruptFiles(t *testing.T) {
	for name, data := range map[string][]byte{
		"size not multiple of 8":                           offsetFile(1, 10, 2)[:11],
		"offsets not increasing":                           offsetFile(5, 10, 5, 20),
		"offsets decreasing":                               offsetFile(5, 10, 4, 20),
		"negative offset":                                  offsetFile(-1, 10),
		"positions decreasing":                             offsetFile(1, 30, 2, 20),
		"negative position":                                offsetFile(1, -5),
		"zero padding (Kafka preallocation after a crash)": offsetFile(1, 10, 2, 20, 0, 0, 0, 0),
		"more entries than max":                            offsetFile(1, 1, 2, 2, 3, 3, 4, 4, 5, 5),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.index")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenOffsetIndex(path, 0, 32)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open = %v, want ErrCorrupt naming the file", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("corrupt file was modified")
			}
		})
	}
}

func TestOffsetIndexSanityCheck(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "a.index"), 0, 1024)
	if err := x.SanityCheck(0); err != nil {
		t.Fatalf("empty index: %v", err)
	}
	if err := x.Append(10, 4000); err != nil {
		t.Fatal(err)
	}
	if err := x.SanityCheck(4001); err != nil {
		t.Fatalf("position inside the log: %v", err)
	}
	for _, size := range []int64{4000, 100, 0} {
		if err := x.SanityCheck(size); !errors.Is(err, ErrCorrupt) {
			t.Errorf("SanityCheck(%d) = %v, want ErrCorrupt", size, err)
		}
	}
}

func TestOffsetIndexConcurrentReaders(t *testing.T) {
	x := openOffset(t, filepath.Join(t.TempDir(), "a.index"), 0, 1<<20)
	const n = 2000
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); i < n; i++ {
				// Every entry is (k, 10k): any answer must respect that.
				o, p := x.Lookup(i)
				if o > i || p != o*10 {
					t.Errorf("Lookup(%d) = (%d, %d)", i, o, p)
					return
				}
			}
		}()
	}
	for i := int64(1); i < n; i++ {
		if err := x.Append(i, i*10); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			if err := x.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
}
