package verify

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReadByAll: the deleter may delete below the least next offset of
// the assigned consumers, and nothing before each has read the partition.
func TestReadByAll(t *testing.T) {
	r := newReadProgress(2)
	r.advance("a1", map[int32]kgo.EpochOffset{0: {Offset: 10}, 1: {Offset: 4}})
	if got := r.readByAll(0); got != 0 {
		t.Fatalf("with a2 yet to read: %d, want 0", got)
	}
	r.advance("a2", map[int32]kgo.EpochOffset{0: {Offset: 7}})
	r.advance("a2", nil)
	for p, want := range map[int32]int64{0: 7, 1: 0, 2: 0} {
		if got := r.readByAll(p); got != want {
			t.Fatalf("partition %d: %d, want %d", p, got, want)
		}
	}
	r.advance("a2", map[int32]kgo.EpochOffset{0: {Offset: 5}}) // never backwards
	if got := r.readByAll(0); got != 7 {
		t.Fatalf("after an older poll: %d, want 7", got)
	}
	if got := newReadProgress(0).readByAll(0); got != 0 {
		t.Fatalf("with no assigned consumers: %d, want 0", got)
	}
}
