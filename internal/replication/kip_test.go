package replication

import (
	"fmt"
	"slices"
	"testing"

	"github.com/weir-project/weir/internal/storage"
)

// haveBatch reports whether batches holds b (same offsets, epoch, CRC).
func haveBatch(batches []batchID, b batchID) bool { return slices.Contains(batches, b) }

// KIP-101 scenario 1 (high watermark truncation followed by immediate
// leader election): follower B has m2 but restarts with a high watermark
// that does not cover it. Truncating to that high watermark would lose m2
// when B is elected before fetching it again. By epoch, B keeps m2: with
// the leader reachable it asks and is told m2's epoch runs past it; with
// the leader gone it cannot ask and so truncates nothing.
func TestKIP101HighWatermarkTruncationThenElection(t *testing.T) {
	for _, leaderUp := range []bool{true, false} {
		t.Run(fmt.Sprintf("leader_reachable_%v", leaderUp), func(t *testing.T) {
			c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
			a, b := int32(1), int32(2)
			c.elect(a)
			c.produce(tpA, 1) // m1
			c.produce(tpA, 1) // m2
			c.waitInSync()
			leader := c.leaderPart(tpA)
			waitFor(t, "m2 committed", func() bool { return leader.Offsets().HighWater == 2 })
			committed := c.checkIdentical()[tpA]

			c.crash(b)
			if !leaderUp {
				c.net.SetDown(a, true)
			}
			c.start(b, 1) // B's checkpointed high watermark covers m1 only
			if leaderUp {
				waitFor(t, "B fetching again", func() bool {
					st, _ := c.nodes[b].m.Status(tpA)
					return st.State == Fetching
				})
				if n := c.logs.count("truncated", "broker=2"); n != 0 {
					t.Fatalf("B truncated %d times; it holds nothing the leader lacks", n)
				}
			} else {
				waitFor(t, "B failing to reach A", func() bool {
					st, _ := c.nodes[b].m.Status(tpA)
					return st.LastError != nil
				})
			}
			c.crash(a)
			c.elect(b)
			if got := c.nodes[b].parts[tpA].Offsets().LogEnd; got != 2 {
				t.Fatalf("new leader B ends at %d: m2 lost", got)
			}
			c.start(a, -1)
			c.produce(tpA, 1)
			c.waitInSync()
			final := c.checkIdentical()[tpA]
			for _, m := range committed {
				if !haveBatch(final, m) {
					t.Fatalf("committed batch %v lost; logs hold %v", m, final)
				}
			}
		})
	}
}

// KIP-101 scenario 2 (replica divergence on restart after multiple hard
// failures): A has m1, m2; B has m1 only. Both fail; B returns first,
// leads a new epoch and takes m3 at m2's offset. A returns with a high
// watermark covering m2: truncating to it would keep m2 where B has m3.
// By epoch, A learns epoch 0 ended at offset 1 on B, cuts m2, and copies
// m3: the logs agree.
func TestKIP101DivergenceAfterMultipleFailures(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
	a, b := int32(1), int32(2)
	c.elect(a)
	c.produce(tpA, 1) // m1
	c.waitInSync()
	c.crash(b)
	c.produce(tpA, 1) // m2, on A only (B lost it: it was never flushed there)
	c.crash(a)

	c.start(b, -1)
	c.elect(b)
	c.produce(tpA, 1) // m3 at offset 1, epoch 1
	c.start(a, 2)     // A's high watermark says m2 was committed
	c.waitInSync()
	batches := c.checkIdentical()[tpA]
	if len(batches) != 2 || batches[1].Epoch != 1 || batches[1].Base != 1 {
		t.Fatalf("logs hold %v, want m1 and B's m3 at offset 1 in epoch 1", batches)
	}
	if n := c.logs.count("truncated by leader epoch", "broker=1", "from=2", "to=1", "asked_epoch=0", "answered_epoch=0", "answered_end_offset=1"); n != 1 {
		t.Fatalf("A logged %d truncations from 2 to 1, want 1", n)
	}
	c.logs.checkDistinctKeys(t)
}

// KIP-279: fast leader changes leave logs that diverge at several epochs.
// A leads epochs 0 and 1 (b1 unreplicated), B leads epoch 2 (b2 at b1's
// offset), A leads epoch 3 (b3). B, with epochs [0 2], asks about epoch 2;
// A answers epoch 1 (ending at 2), an epoch B lacks: B cuts back to the
// end of its epoch 0 and asks again. Answering min(leader end, log end) =
// 2 instead, as before KIP-279, would keep b2 under A's b1.
func TestKIP279DivergenceAtSeveralEpochs(t *testing.T) {
	c := newCluster(t, []int32{1, 2, 3}, []storage.TopicPartition{tpA}, Config{})
	a, b, cc := int32(1), int32(2), int32(3)
	c.elect(a) // epoch 0
	c.produce(tpA, 2)
	c.waitInSync()
	c.crash(b)
	c.crash(cc)
	c.elect(a) // epoch 1: b1 on A only
	c.produce(tpA, 3)
	c.crash(a)
	c.start(b, -1)
	c.start(cc, -1)
	c.elect(b) // epoch 2: b2 on B and C
	c.produce(tpA, 1, 4)
	c.waitInSync()
	c.crash(b)
	c.crash(cc)
	c.start(a, -1)
	c.elect(a) // epoch 3
	c.produce(tpA, 2)
	c.start(b, -1)
	c.start(cc, -1)
	c.waitInSync()
	batches := c.checkIdentical()[tpA]
	var epochs []int32
	for _, x := range batches {
		epochs = append(epochs, x.Epoch)
	}
	if fmt.Sprint(epochs) != "[0 1 3]" {
		t.Fatalf("batch epochs %v (%v), want A's [0 1 3]", epochs, batches)
	}
	for _, id := range []string{"broker=2", "broker=3"} {
		// One intermediate cut (back to the end of epoch 0), then done.
		if n := c.logs.count("truncated by leader epoch", id, "from=7", "to=2", "done=false"); n != 1 {
			t.Fatalf("%s: %d intermediate truncations from 7 to 2, want 1", id, n)
		}
	}
}

// Repeated leader changes with a follower that keeps missing epochs: it
// converges to the leader's log however many epochs it missed.
func TestFastLeaderChangesConverge(t *testing.T) {
	c := newCluster(t, []int32{1, 2, 3}, []storage.TopicPartition{tpA}, Config{})
	c.elect(1)
	c.produce(tpA, 1)
	c.waitInSync()
	// Broker 3 is away while 1 and 2 alternate, each leading a few
	// epochs with writes the other then drops or keeps.
	c.crash(3)
	for round := range 6 {
		leader := int32(1 + round%2)
		other := int32(1 + (round+1)%2)
		c.crash(other)
		c.elect(leader)
		c.produce(tpA, 1+round%3)
		c.start(other, -1)
		if round%2 == 0 {
			c.waitInSync()
		}
	}
	c.start(3, -1)
	c.produce(tpA, 1)
	c.waitInSync()
	c.checkIdentical()
}

// A broker that led an epoch without writing in it keeps that epoch's
// entry at its log end (storage does not drop it on a truncation that
// cuts nothing). Asked about it, the new leader answers an epoch the
// broker lacks; the cut to the end of the broker's previous epoch changes
// nothing and the entry stays, so the next question must be about that
// previous epoch (as Kafka's would be, its cache having dropped the
// entry), not about the latest one again, or the walk never ends.
func TestFormerLeaderOfAnEmptyEpoch(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
	a, b := int32(1), int32(2)
	c.elect(a) // epoch 0
	c.produce(tpA, 2)
	c.waitInSync()
	c.crash(b)
	c.elect(a) // epoch 1: written on A only
	c.produce(tpA, 3)
	c.crash(a)
	c.start(b, -1)
	c.elect(b) // epoch 2: B leads, writes nothing
	c.elect(a) // epoch 3, while A is still down: B follows A
	c.start(a, -1)
	c.produce(tpA, 1)
	c.waitInSync()
	batches := c.checkIdentical()[tpA]
	if len(batches) != 3 || batches[1].Epoch != 1 || batches[2].Epoch != 3 {
		t.Fatalf("logs hold %v, want A's epochs 0, 1, 3", batches)
	}
}
