package replication

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage"
)

var tpB = storage.TopicPartition{Topic: "orders", Partition: 1}

// A follower whose log ends below the leader's log start (it was away
// while the leader deleted records) gets OFFSET_OUT_OF_RANGE, empties its
// log and restarts it at the leader's log start. When that start lies
// inside a batch, the whole batch arrives and the log starts at its base,
// as in Kafka. Then the follower takes the leader's log start.
func TestFollowerBehindLeaderLogStart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		deleteTo    int64
		followerHas bool
		wantStart   int64
	}{
		{"empty_follower_aligned", 15, false, 15},
		{"empty_follower_mid_batch", 14, false, 14},
		{"stale_follower_mid_batch", 14, true, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
			c.isr = []int32{1} // the leader commits alone
			c.elect(1)
			if tc.followerHas {
				c.produce(tpA, 3)
				c.waitInSync()
			}
			c.crash(2)
			for c.leaderPart(tpA).Offsets().LogEnd < 30 {
				c.produce(tpA, 3)
			}
			if _, _, err := c.leaderPart(tpA).DeleteRecordsBefore(tc.deleteTo); err != nil {
				t.Fatal(err)
			}
			c.start(2, -1)
			c.waitInSync()
			f := c.nodes[2].parts[tpA]
			waitFor(t, "follower's log start at the leader's", func() bool { return f.Offsets().LogStart == tc.wantStart })
			c.checkIdentical()
			if n := c.logs.count("emptied the log", "broker=2"); n != 1 {
				t.Fatalf("%d full truncations logged, want 1", n)
			}
		})
	}
}

// A follower whose log end is past the leader's within the same epoch
// (the leader lost records it had replicated) gets OFFSET_OUT_OF_RANGE and
// truncates by epoch: back to the leader's end.
func TestFollowerAheadOfLeaderTruncatesByEpoch(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
	c.elect(1)
	c.produce(tpA, 2, 2, 2)
	c.waitInSync()
	// The leader's disk loses its last batch (the page cache was not
	// flushed when it lost power) while it keeps leading the same epoch.
	c.crash(1)
	log, err := storage.OpenLog(c.nodes[1].dirs[tpA], c.logCfg, 0, 0, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := log.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	log.Close()
	c.start(1, -1) // same leader, same epoch: the follower fetches on from 6
	c.produce(tpA, 1)
	c.waitInSync()
	if got := c.checkIdentical()[tpA]; len(got) != 3 || got[2].Base != 4 {
		t.Fatalf("logs %v, want the leader's 3 batches", got)
	}
	if n := c.logs.count("out of range", "broker=2", "offset=6"); n != 1 {
		t.Fatalf("%d out-of-range lines at offset 6, want 1", n)
	}
	if n := c.logs.count("truncated by leader epoch", "broker=2", "from=6", "to=4"); n != 1 {
		t.Fatalf("%d truncations from 6 to 4, want 1", n)
	}
}

// Connection failures back every partition of the fetcher off, and the
// fetcher dials again once the leader is back.
func TestConnectionFailureBacksOffAndRedials(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA, tpB}, Config{})
	c.elect(1)
	c.produce(tpA, 1)
	c.waitInSync()
	dials := c.net.Dials(1)
	c.net.SetDown(1, true)
	waitFor(t, "both partitions backing off", func() bool {
		for _, tp := range c.tps {
			st, _ := c.nodes[2].m.Status(tp)
			if st.LastError == nil || !strings.Contains(st.LastError.Error(), "unreachable") {
				return false
			}
		}
		return true
	})
	c.produce(tpA, 2)
	c.produce(tpB, 3)
	c.net.SetDown(1, false)
	c.waitInSync()
	c.checkIdentical()
	if c.net.Dials(1) <= dials {
		t.Fatal("the fetcher did not dial again")
	}
	if n := c.net.OpenClients(1); n != 1 {
		t.Fatalf("%d clients open to the leader, want 1", n)
	}
	waitFor(t, "the error cleared by a successful fetch", func() bool {
		st, _ := c.nodes[2].m.Status(tpA)
		return st.LastError == nil
	})
}

// A partition added while the fetcher waits in a long poll starts at
// once: the long poll is cut short, not waited out.
func TestPartitionAddedDuringLongPollStartsPromptly(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA, tpB}, Config{MaxWait: time.Hour})
	c.elect(1)
	f := c.nodes[2]
	f.m.Unfollow(tpB)
	c.produce(tpB, 2)
	waitFor(t, "a long poll for A alone", func() bool { return c.net.LongPolling(1, tpA) && !c.net.LongPolling(1, tpB) })
	f.m.Follow(f.parts[tpB], topicID(tpB.Topic), 1, c.epoch)
	waitFor(t, "B copied without waiting out the hour-long poll", func() bool {
		return f.parts[tpB].Offsets().LogEnd == 2
	})
}

// Unfollow is synchronous: an answer to a fetch in flight when it
// returned does not reach the replica, while the other partitions of the
// same fetch are applied.
func TestUnfollowDuringLongPoll(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA, tpB}, Config{MaxWait: time.Hour})
	c.elect(1)
	f := c.nodes[2]
	waitFor(t, "a long poll for A and B", func() bool { return c.net.LongPolling(1, tpA, tpB) })
	f.m.Unfollow(tpA)
	c.produce(tpA, 3)
	c.produce(tpB, 2)
	waitFor(t, "B copied", func() bool { return f.parts[tpB].Offsets().LogEnd == 2 })
	// The next long poll, without A, means the answer naming A was dealt
	// with in full.
	waitFor(t, "a long poll for B alone", func() bool { return c.net.LongPolling(1, tpB) && !c.net.LongPolling(1, tpA) })
	if got := f.parts[tpA].Offsets().LogEnd; got != 0 {
		t.Fatalf("unfollowed partition A got records up to %d", got)
	}
	if _, ok := f.m.Status(tpA); ok {
		t.Fatal("A still listed after Unfollow")
	}
	f.m.Unfollow(tpB)
	waitFor(t, "the client of a fetcher left without partitions closed", func() bool { return c.net.OpenClients(1) == 0 })
	if f.m.Fetchers() != 0 {
		t.Fatalf("%d fetchers left", f.m.Fetchers())
	}
}

// Many partitions led by one broker share one fetcher: one client, one
// request per round; with num.replica.fetchers they spread over that many.
func TestManyPartitionsOneFetcher(t *testing.T) {
	for _, fetchers := range []int{1, 3} {
		t.Run(fmt.Sprintf("fetchers_%d", fetchers), func(t *testing.T) {
			var tps []storage.TopicPartition
			for i := range 60 {
				tps = append(tps, storage.TopicPartition{Topic: fmt.Sprintf("t%d", i%4), Partition: int32(i / 4)})
			}
			c := newCluster(t, []int32{1, 2}, tps, Config{Fetchers: fetchers})
			c.elect(1)
			for i, tp := range tps {
				c.produce(tp, 1+i%3)
			}
			c.waitInSync()
			for _, tp := range tps[:10] {
				c.produce(tp, 2)
			}
			c.waitInSync()
			c.checkIdentical()
			if got := c.nodes[2].m.Fetchers(); got != fetchers {
				t.Fatalf("%d fetchers, want %d", got, fetchers)
			}
			if got := c.net.Dials(1); got != fetchers {
				t.Fatalf("%d dials to the leader, want %d", got, fetchers)
			}
		})
	}
}

// A local storage failure while appending is retried after the backoff,
// from the same offset: nothing is skipped.
func TestLocalStorageErrorBacksOff(t *testing.T) {
	c := newCluster(t, []int32{1, 2}, []storage.TopicPartition{tpA}, Config{})
	c.elect(1)
	c.produce(tpA, 2)
	c.waitInSync()
	if err := c.nodes[2].logs[tpA].Close(); err != nil { // the disk goes away
		t.Fatal(err)
	}
	c.produce(tpA, 1)
	waitFor(t, "append failure reported", func() bool {
		st, _ := c.nodes[2].m.Status(tpA)
		return st.LastError != nil && strings.Contains(st.LastError.Error(), "closed")
	})
	waitFor(t, "the failure logged", func() bool { return c.logs.count("backing off", "broker=2") > 0 })
	fetches := c.net.Fetches(1)
	waitFor(t, "three more attempts", func() bool { return c.net.Fetches(1) >= fetches+3 })
	st, _ := c.nodes[2].m.Status(tpA)
	if st.LogEnd != 2 || st.State != Fetching {
		t.Fatalf("status %+v, want still fetching from 2", st)
	}
	if got := c.logs.count("backing off", "broker=2"); got != 1 {
		t.Fatalf("%d backoff lines for one repeated failure, want 1", got)
	}
}

// With responses far smaller than the backlog (replica.fetch.max.bytes,
// replica.fetch.response.max.bytes), every partition still catches up:
// the first batch always comes, the rest wait their turn.
func TestSmallResponsesCatchUp(t *testing.T) {
	var tps []storage.TopicPartition
	for i := range 6 {
		tps = append(tps, storage.TopicPartition{Topic: "small", Partition: int32(i)})
	}
	c := newCluster(t, []int32{1, 2}, tps, Config{MaxBytes: 300, PartitionMaxBytes: 200})
	c.elect(1)
	c.crash(2)
	for _, tp := range tps {
		for range 10 {
			c.produce(tp, 3) // about 130 bytes a batch
		}
	}
	c.start(2, -1)
	c.waitInSync()
	c.checkIdentical()
}
