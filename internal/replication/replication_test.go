package replication

import (
	"fmt"
	"testing"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

var tpA = storage.TopicPartition{Topic: "orders", Partition: 0}

// A follower's log becomes byte for byte the leader's (offsets, leader
// epochs, CRCs), its high watermark follows the leader's, and the leader
// learns the follower's progress from its fetch offsets: whatever Fetch
// version the leader negotiates (ReplicaID before v15, ReplicaState from
// v15; topic names before v13, ids from v13; no log start offset in v4).
func TestFollowerCopiesLeader(t *testing.T) {
	for _, v := range []int16{4, 5, 12, 13, 15, 17} {
		t.Run(fmt.Sprintf("fetch_v%d", v), func(t *testing.T) {
			c := newCluster(t, []int32{1, 2, 3}, []storage.TopicPartition{tpA}, Config{})
			c.net.SetVersions(v, 4)
			c.elect(1)
			c.produce(tpA, 1, 5, 2)
			c.waitInSync()
			c.produce(tpA, 3)
			c.waitInSync()
			batches := c.checkIdentical()[tpA]
			if len(batches) != 4 || batches[3].Last != 10 {
				t.Fatalf("batches %v, want 4 ending at offset 10", batches)
			}
			leader := c.leaderPart(tpA)
			waitFor(t, "leader high watermark at the log end", func() bool { return leader.Offsets().HighWater == 11 })
			for _, id := range []int32{2, 3} {
				f := c.nodes[id].parts[tpA]
				waitFor(t, fmt.Sprintf("broker %d high watermark from the leader", id), func() bool { return f.Offsets().HighWater == 11 })
				st, ok := c.nodes[id].m.Status(tpA)
				if !ok || st.State != Fetching || st.LeaderID != 1 || st.LastError != nil {
					t.Fatalf("broker %d status %+v", id, st)
				}
			}
			for _, fs := range leader.Followers() {
				if fs.LogEnd != 11 {
					t.Fatalf("leader's view of follower %d: log end %d, want 11", fs.ID, fs.LogEnd)
				}
			}
		})
	}
}

// Follow with the leader and epoch already followed changes nothing; a new
// epoch of the same leader, and then a new leader, restart the partition
// (truncation first) and replication goes on.
func TestFollowAcrossLeaderEpochs(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
	c.elect(1)
	c.produce(tpA, 2, 2)
	c.waitInSync()
	f := c.nodes[2]
	dials := c.net.Dials(1)
	for range 3 {
		f.m.Follow(f.parts[tpA], topicID(tpA.Topic), 1, c.epoch)
	}
	if got := c.logs.count("following", "broker=2"); got != 1 {
		t.Fatalf("%d 'following' lines for broker 2 after repeated Follow, want 1", got)
	}
	if c.net.Dials(1) != dials {
		t.Fatal("repeated Follow of the same leader epoch dialed again")
	}

	c.elect(1) // same leader, epoch 1
	c.produce(tpA, 3)
	c.waitInSync()
	c.elect(2) // broker 2 leads epoch 2; broker 1 follows it
	c.produce(tpA, 1, 4)
	c.waitInSync()
	batches := c.checkIdentical()[tpA]
	epochs := []int32{}
	for _, b := range batches {
		epochs = append(epochs, b.Epoch)
	}
	if fmt.Sprint(epochs) != "[0 0 1 2 2]" {
		t.Fatalf("batch epochs %v, want [0 0 1 2 2]", epochs)
	}
	if st, _ := c.nodes[1].m.Status(tpA); st.LeaderID != 2 || st.LeaderEpoch != 2 || st.State != Fetching {
		t.Fatalf("broker 1 status %+v", st)
	}
	if _, ok := c.nodes[2].m.Status(tpA); ok {
		t.Fatal("the leader still follows its own partition")
	}
}

// The replica moving to a new epoch before the broker calls Follow stops
// the partition (nothing more is appended at the old epoch); the Follow
// for the new epoch starts it again.
func TestReplicaMovedOnStopsUntilFollow(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
	c.elect(1)
	c.produce(tpA, 2)
	c.waitInSync()
	f := c.nodes[2]
	c.epoch++
	for _, id := range c.ids {
		if _, err := c.nodes[id].parts[tpA].Update(replica.State{LeaderID: 1, LeaderEpoch: c.epoch, Replicas: c.ids, ISR: c.ids, MinISR: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c.produce(tpA, 1) // wakes the follower's long poll; its epoch-0 fetch is refused now
	waitFor(t, "partition stopped", func() bool {
		st, _ := f.m.Status(tpA)
		return st.State == Stopped
	})
	waitFor(t, "fetcher of a stopped partition gone", func() bool { return c.net.OpenClients(1) == 0 })
	f.m.Follow(f.parts[tpA], topicID(tpA.Topic), 1, c.epoch)
	c.waitInSync()
	c.checkIdentical()
}

// Close stops every fetcher and closes every client.
func TestCloseStopsFetchers(t *testing.T) {
	tps := []storage.TopicPartition{tpA, {Topic: "orders", Partition: 1}}
	c := newCluster(t, []int32{1, 2, 3}, tps, Config{})
	c.elect(1)
	c.produce(tpA, 1)
	c.waitInSync()
	c.nodes[2].m.Close()
	if n := c.net.OpenClients(1); n != 1 {
		t.Fatalf("%d clients open to the leader after broker 2's Close, want broker 3's only", n)
	}
	c.nodes[2].m.Follow(c.nodes[2].parts[tpA], topicID(tpA.Topic), 1, c.epoch)
	if c.nodes[2].m.Fetchers() != 0 {
		t.Fatal("Follow after Close started a fetcher")
	}
}
