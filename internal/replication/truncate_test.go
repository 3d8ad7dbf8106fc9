package replication

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/weir-project/weir/internal/storage/leaderepoch"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// epochs is a follower's leader epoch cache as (epoch, start offset)
// pairs.
type epochs [][2]int64

// lookup answers from a real leader epoch cache holding e.
func (e epochs) lookup(t *testing.T, logEnd int64) func(int32) (int32, int64) {
	c, err := leaderepoch.Open(filepath.Join(t.TempDir(), "leader-epoch-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range e {
		if err := c.Assign(int32(p[0]), p[1]); err != nil {
			t.Fatal(err)
		}
	}
	return func(epoch int32) (int32, int64) { return c.EndOffsetFor(epoch, logEnd) }
}

func TestDecideTruncation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ours        epochs
		logEnd      int64
		asked       int32
		leaderEpoch int32
		leaderEnd   int64
		want        truncation
	}{
		// KIP-101: both know epoch 2; the leader's ended earlier.
		{"same epoch, leader ends first", epochs{{0, 0}, {2, 10}}, 20, 2, 2, 15, truncation{offset: 15, done: true}},
		{"same epoch, we end first", epochs{{0, 0}, {2, 10}}, 12, 2, 2, 15, truncation{offset: 12, done: true}},
		{"older epoch ends where ours does", epochs{{0, 0}, {2, 10}}, 20, 2, 0, 10, truncation{offset: 10, done: true}},
		// KIP-279: the leader answers epoch 1, which we lack: cut to the
		// end of our epoch 0 (10) and ask about epoch 0.
		{"leader's epoch unknown here", epochs{{0, 0}, {2, 10}}, 20, 2, 1, 15, truncation{offset: 10, nextAsk: 0}},
		{"walk back several epochs", epochs{{0, 0}, {3, 5}, {5, 10}}, 20, 5, 4, 12, truncation{offset: 10, nextAsk: 3}},
		// The leader answers an epoch older than all of ours (our start
		// is past it): the cache reports it with our first start.
		{"leader epoch below our history", epochs{{4, 30}, {6, 40}}, 50, 6, 2, 35, truncation{offset: 30, done: true}},
		// Old protocol: an offset without an epoch.
		{"no epoch in the answer", epochs{{0, 0}}, 20, 0, -1, 7, truncation{offset: 7, done: true}},
		// UNDEFINED_EPOCH_OFFSET: the leader has nothing at or below the
		// asked epoch; drop that epoch's records and ask about the one
		// before it.
		{"leader knows no such epoch", epochs{{0, 0}, {2, 10}, {5, 18}}, 25, 5, -1, -1, truncation{offset: 18, nextAsk: 2}},
		{"leader knows no epoch at all", epochs{{3, 4}}, 9, 3, -1, -1, truncation{offset: 4, nextAsk: 2}},
		{"leader knows no epoch, asked 0", epochs{{0, 0}}, 9, 0, -1, -1, truncation{offset: 0, done: true, nextAsk: -1}},
		// Nothing to cut.
		{"logs agree", epochs{{0, 0}, {1, 5}}, 8, 1, 1, 8, truncation{offset: 8, done: true}},
		// A leader answering an epoch above the one asked: no loop.
		{"leader answers a newer epoch", epochs{{0, 0}, {2, 10}, {4, 16}}, 20, 1, 3, 18, truncation{offset: 16, nextAsk: 2, done: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideTruncation(tc.asked, tc.leaderEpoch, tc.leaderEnd, tc.logEnd, 0, tc.ours.lookup(t, tc.logEnd))
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWholeBatches(t *testing.T) {
	var all []byte
	for i := range 3 {
		b, err := recordbatch.Build(recordbatch.BuildOptions{BaseOffset: int64(2 * i), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]recordbatch.Record{{Value: []byte("a")}, {Value: []byte("b")}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	one := len(all) / 3
	for _, tc := range []struct {
		in      []byte
		want    int
		wantErr bool
	}{
		{nil, 0, false},
		{all, len(all), false},
		{all[:len(all)-1], 2 * one, false}, // a partial last batch waits
		{all[:2*one+10], 2 * one, false},   // a partial header too
		{all[:one-1], 0, true},             // not even one whole batch
		{bytes.Repeat([]byte{0xff}, 100), 0, true},
	} {
		got, err := wholeBatches(tc.in)
		if (err != nil) != tc.wantErr || len(got) != tc.want {
			t.Errorf("wholeBatches(%d bytes) = %d bytes, %v; want %d bytes, error %v", len(tc.in), len(got), err, tc.want, tc.wantErr)
		}
		if err != nil && !errors.Is(err, recordbatch.ErrCorrupt) {
			t.Errorf("error %v does not wrap ErrCorrupt", err)
		}
	}
}

// FuzzWholeBatches: fetched bytes come from the network; whatever they
// are, the result is a prefix made of whole batches, or an error.
func FuzzWholeBatches(f *testing.F) {
	b, _ := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []recordbatch.Record{{Value: []byte("v")}})
	f.Add(b)
	f.Add(append(b, b[:20]...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := wholeBatches(in)
		if err != nil {
			return
		}
		if !bytes.Equal(out, in[:len(out)]) {
			t.Fatal("result is not a prefix of the input")
		}
		if err := recordbatch.Split(out, func([]byte, recordbatch.Header) error { return nil }); err != nil {
			t.Fatalf("result does not split into whole batches: %v", err)
		}
	})
}
