package index

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// BenchmarkOffsetLookup measures finding the index entry for an offset
// in a full default-size index (10 MiB, 1.3 million entries, one per
// 1 KiB of log, a segment of 1.3 GiB): what every fetch
// does for the segment it reads.
func BenchmarkOffsetLookup(b *testing.B) {
	const maxBytes = 10 << 20
	x, err := OpenOffsetIndex(filepath.Join(b.TempDir(), "00000000000000000000.index"), 0, maxBytes)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	n := int64(0)
	for !x.Full() {
		if err := x.Append(n*4, n*1024); err != nil { // positions stay below 2 GiB
			b.Fatal(err)
		}
		n++
	}
	r := rand.New(rand.NewPCG(1, 2))
	targets := make([]int64, 1024)
	for i := range targets {
		targets[i] = r.Int64N(n * 4)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		t := targets[i%len(targets)]
		if o, _ := x.Lookup(t); o > t {
			b.Fatalf("Lookup(%d) = %d", t, o)
		}
	}
}
