package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openTime(t *testing.T, path string, base int64, maxBytes int) *TimeIndex {
	t.Helper()
	x, err := OpenTimeIndex(path, base, maxBytes)
	if err != nil {
		t.Fatalf("OpenTimeIndex: %v", err)
	}
	return x
}

// timeFile encodes (timestamp, relative offset) pairs as Kafka writes them.
func timeFile(pairs ...[2]int64) []byte {
	var b []byte
	for _, p := range pairs {
		b = binary.BigEndian.AppendUint64(b, uint64(p[0]))
		b = binary.BigEndian.AppendUint32(b, uint32(p[1]))
	}
	return b
}

func TestTimeIndexMaybeAppendAndLookup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000100.timeindex")
	x := openTime(t, path, 100, 1024)
	if ts, off := x.LastEntry(); ts != -1 || off != 100 {
		t.Fatalf("empty LastEntry = (%d, %d)", ts, off)
	}
	if off := x.Lookup(5000); off != 100 {
		t.Fatalf("empty Lookup = %d", off)
	}
	for _, e := range [][2]int64{
		{1000, 100}, {2000, 110},
		{2000, 120}, // same timestamp: ignored
		{1500, 130}, // older timestamp: ignored
		{2500, 105}, // offset below the last entry: ignored
		{3000, 110}, // same offset, newer timestamp: kept
		{4000, 150},
	} {
		if err := x.MaybeAppend(e[0], e[1]); err != nil {
			t.Fatalf("MaybeAppend%v: %v", e, err)
		}
	}
	if x.Len() != 4 {
		t.Fatalf("Len %d, want 4", x.Len())
	}
	for _, tc := range []struct{ ts, off int64 }{
		{0, 100}, {999, 100}, {1000, 100}, {1999, 100}, {2000, 110}, {2999, 110},
		{3000, 110}, {3999, 110}, {4000, 150}, {1 << 60, 150},
	} {
		if off := x.Lookup(tc.ts); off != tc.off {
			t.Errorf("Lookup(%d) = %d, want %d", tc.ts, off, tc.off)
		}
	}
	if ts, off := x.LastEntry(); ts != 4000 || off != 150 {
		t.Fatalf("LastEntry = (%d, %d)", ts, off)
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	want := timeFile([2]int64{1000, 0}, [2]int64{2000, 10}, [2]int64{3000, 10}, [2]int64{4000, 50})
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("file\n got %x\nwant %x", got, want)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y := openTime(t, path, 100, 1024)
	if y.Len() != 4 || y.Lookup(2500) != 110 || y.SanityCheck() != nil {
		t.Fatalf("reopened: Len %d Lookup %d", y.Len(), y.Lookup(2500))
	}
}

func TestTimeIndexFullAndRange(t *testing.T) {
	x := openTime(t, filepath.Join(t.TempDir(), "a.timeindex"), 100, 24)
	if err := x.MaybeAppend(1, 99); err == nil {
		t.Fatal("offset below base accepted")
	}
	for i := int64(1); i <= 2; i++ {
		if err := x.MaybeAppend(i, 100+i); err != nil {
			t.Fatal(err)
		}
	}
	if !x.Full() {
		t.Fatal("not full at 2 entries of 12 bytes in 24")
	}
	if err := x.MaybeAppend(10, 110); !errors.Is(err, ErrFull) {
		t.Fatalf("MaybeAppend on full = %v", err)
	}
	// An entry that would be skipped anyway is not an error.
	if err := x.MaybeAppend(1, 110); err != nil {
		t.Fatalf("skipped append on full index: %v", err)
	}
}

func TestTimeIndexTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.timeindex")
	x := openTime(t, path, 0, 1024)
	for i := int64(1); i <= 4; i++ {
		if err := x.MaybeAppend(i*100, i*10); err != nil {
			t.Fatal(err)
		}
	}
	x.TruncateTo(25)
	if ts, off := x.LastEntry(); x.Len() != 2 || ts != 200 || off != 20 {
		t.Fatalf("after TruncateTo(25): Len %d last (%d, %d)", x.Len(), ts, off)
	}
	x.TruncateTo(20)
	if x.Len() != 1 {
		t.Fatalf("after TruncateTo(20): Len %d", x.Len())
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, timeFile([2]int64{100, 10})) {
		t.Fatalf("file %x", got)
	}
	x.Reset()
	if x.Len() != 0 || x.Lookup(1000) != 0 {
		t.Fatal("Reset left entries")
	}
	if err := x.Rename(path + ".deleted"); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + ".deleted"); err != nil || fi.Size() != 0 || x.Path() != path+".deleted" {
		t.Fatalf("renamed file: %v, %v", fi, err)
	}
}

func TestTimeIndexCorruptFiles(t *testing.T) {
	for name, data := range map[string][]byte{
		"size not multiple of 12": timeFile([2]int64{1, 1})[:10],
		"equal timestamps":        timeFile([2]int64{5, 1}, [2]int64{5, 2}),
		"timestamps decreasing":   timeFile([2]int64{5, 1}, [2]int64{4, 2}),
		"offsets decreasing":      timeFile([2]int64{5, 2}, [2]int64{6, 1}),
		"negative offset":         timeFile([2]int64{5, -1}),
		"zero padding":            timeFile([2]int64{5, 1}, [2]int64{0, 0}),
		"more entries than max":   timeFile([2]int64{1, 1}, [2]int64{2, 2}, [2]int64{3, 3}),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.timeindex")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := OpenTimeIndex(path, 0, 24)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open = %v, want ErrCorrupt naming the file", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("corrupt file was modified")
			}
		})
	}
}
