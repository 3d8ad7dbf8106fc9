package producerstate

import (
	"math"
	"reflect"
	"testing"
)

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot decoder: it
// must never panic, and whatever it accepts must survive a re-encode.
func FuzzDecodeSnapshot(f *testing.F) {
	s := &State{producers: make(map[int64]*entry)}
	f.Add(encodeSnapshot(s.producers))
	s.OnBatch(batch(1, 0, 0, 3))
	f.Add(encodeSnapshot(s.producers))
	for i := range int32(7) {
		s.OnBatch(batch(2, 1, math.MaxInt32-5+i*2, 2))
	}
	s.OnBatch(batch(3, 0, -1, 1))
	f.Add(encodeSnapshot(s.producers))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 1, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		producers, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		for id, e := range producers {
			if id < 0 || len(e.batches) > RetainedBatches {
				t.Fatalf("accepted producer %d with %d batches", id, len(e.batches))
			}
		}
		again, err := decodeSnapshot(encodeSnapshot(producers))
		if err != nil {
			t.Fatalf("re-encoded snapshot rejected: %v", err)
		}
		if !reflect.DeepEqual(again, producers) {
			t.Fatalf("re-encode changed the state:\n%+v\n%+v", again, producers)
		}
	})
}
