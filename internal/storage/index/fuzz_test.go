package index

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// openFromBytes writes data to a fresh file and opens it with open.
func openFromBytes[T any](t *testing.T, data []byte, open func(string) (T, error)) (T, string, error) {
	path := filepath.Join(t.TempDir(), "fuzz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := open(path)
	return x, path, err
}

func FuzzOpenOffsetIndex(f *testing.F) {
	f.Add(offsetFile(1, 10, 2, 20, 30, 4000))
	f.Add(offsetFile(0, 0))
	f.Add(offsetFile(5, 10, 5, 20))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		x, path, err := openFromBytes(t, data, func(p string) (*OffsetIndex, error) { return OpenOffsetIndex(p, 1000, 4096) })
		if err != nil {
			return
		}
		// An accepted file has ordered entries that look up to themselves
		// and is written back byte for byte.
		prev := int64(-1)
		for i := 0; i < x.Len(); i++ {
			rel, _ := x.at(i)
			off := 1000 + int64(rel)
			if off <= prev {
				t.Fatalf("accepted unordered entry %d", i)
			}
			if got, _ := x.Lookup(off); got != off {
				t.Fatalf("Lookup(%d) = %d", off, got)
			}
			prev = off
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatal("file changed by open+close")
		}
	})
}

func FuzzOpenTimeIndex(f *testing.F) {
	f.Add(timeFile([2]int64{1000, 1}, [2]int64{2000, 1}, [2]int64{3000, 9}))
	f.Add(timeFile([2]int64{5, 1}, [2]int64{5, 2}))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		x, path, err := openFromBytes(t, data, func(p string) (*TimeIndex, error) { return OpenTimeIndex(p, 0, 4096) })
		if err != nil {
			return
		}
		if err := x.SanityCheck(); err != nil {
			t.Fatalf("accepted file fails SanityCheck: %v", err)
		}
		prevTS, prevOff := int64(-1<<63), int64(-1)
		for i := 0; i < x.Len(); i++ {
			ts, off := x.at(i)
			if int64(off) < prevOff || (i > 0 && ts <= prevTS) {
				t.Fatalf("accepted unordered entry %d", i)
			}
			if got := x.Lookup(ts); got != int64(off) {
				t.Fatalf("Lookup(%d) = %d, want %d", ts, got, off)
			}
			prevTS, prevOff = ts, int64(off)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatal("file changed by open+close")
		}
	})
}
