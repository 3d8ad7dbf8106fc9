package verify

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSegment is n one-record batches from base on: a batch header's
// offset and length fields and a body of 50 bytes, which is all the cut
// reads.
func fakeSegment(base int64, n int) []byte {
	var b []byte
	for i := range n {
		h := bytes.Repeat([]byte{0xab}, 12+50) // not zeros, which a cut may leave
		binary.BigEndian.PutUint64(h, uint64(base+int64(i)))
		binary.BigEndian.PutUint32(h[8:], 50)
		b = append(b, h...)
	}
	return b
}

var snapshotBytes = bytes.Repeat([]byte("snapshot"), 20)

func TestCutUnflushedKeepsWhatWasFsynced(t *testing.T) {
	const batch = 62
	orig := map[string][]byte{
		"00000000000000000000.log": fakeSegment(0, 10),
		"00000000000000000010.log": fakeSegment(10, 10),
		"00000000000000000020.log": fakeSegment(20, 10),
	}
	seen := map[string]bool{}
	for seed := range uint64(200) {
		dir := t.TempDir()
		for name, data := range orig {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, snap := range []string{"00000000000000000010.snapshot", "00000000000000000020.snapshot"} {
			if err := os.WriteFile(filepath.Join(dir, snap), snapshotBytes, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Recovery point 15: the first segment and five batches of the
		// second were fsynced.
		gone, what, err := cutUnflushed(dir, 15, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		seen[strings.Split(what, "[snapshots")[0]] = true
		if got, err := os.ReadFile(filepath.Join(dir, "00000000000000000010.snapshot")); err != nil || !bytes.Equal(got, snapshotBytes) {
			t.Fatalf("seed %d: the snapshot at 10, below the recovery point, changed: %v", seed, err)
		}
		for name, want := range orig {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, fs.ErrNotExist) {
				if name != "00000000000000000020.log" {
					t.Fatalf("seed %d: %s removed", seed, name)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			floor := 0
			switch name {
			case "00000000000000000000.log":
				floor = len(want)
			case "00000000000000000010.log":
				floor = 5 * batch
			}
			same := 0 // the bytes kept as they were; zeros may follow
			for same < min(len(got), len(want)) && got[same] == want[same] {
				same++
			}
			if same < floor {
				t.Fatalf("seed %d: %s: %d bytes kept as they were, want at least %d", seed, name, same, floor)
			}
			if tail := got[same:]; !bytes.Equal(tail, make([]byte, len(tail))) {
				t.Fatalf("seed %d: %s: other than zeros after the cut", seed, name)
			}
		}
		if above := int64(15 * batch); gone < 0 || gone > above {
			t.Fatalf("seed %d: %d bytes reported gone, but only %d lay above the recovery point", seed, gone, above)
		}
	}
	for _, want := range []string{"[later removed]", "[later emptied]", "[later kept]"} {
		if !seen[want] {
			t.Errorf("200 seeds never did %q to a later segment; saw %v", want, seen)
		}
	}
}

func TestBatchBoundaries(t *testing.T) {
	data := fakeSegment(100, 4) // batches at 0, 62, 124, 186; end 248
	for _, c := range []struct{ off, want int }{{100, 0}, {99, 0}, {102, 124}, {103, 186}, {104, 248}, {500, 248}} {
		if got := batchAt(data, 100, int64(c.off)); got != c.want {
			t.Errorf("batchAt(%d) = %d, want %d", c.off, got, c.want)
		}
	}
	for _, c := range []struct{ cut, want int }{{0, 0}, {61, 0}, {62, 62}, {100, 62}, {248, 248}, {247, 186}} {
		if got := batchStart(data, c.cut); got != c.want {
			t.Errorf("batchStart(%d) = %d, want %d", c.cut, got, c.want)
		}
	}
}
