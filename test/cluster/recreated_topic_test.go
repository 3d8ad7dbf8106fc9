package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// TestTopicRecreatedWhileReplicaAway: a topic is deleted and created again
// under the same name while one of its replicas is away, killed (-9) or
// stopped (SIGSTOP). The away replica comes back holding the old topic's
// log: 1,500 records, more than the new topic will have, at the same
// offsets and the same leader epochs (both incarnations start at epoch
// 0). Kept and truncated by leader epoch, that log would keep old records
// at offsets the new topic's own records hold on the other replicas, and
// serve them once it leads: the history to look for is a value of the old
// topic read from the new one, or an acknowledged record of the new one
// gone. The replica must drop the old log (its partition.metadata names
// the old topic id) and fetch the new one from scratch.
//
// The away node is the new topic's preferred leader, so once it is back
// in the ISR a preferred election makes it lead, and the whole partition
// is read back through it by franz-go and kcat: exactly the new topic's
// values, each where its acknowledgement said. The three logs end
// identical.
func TestTopicRecreatedWhileReplicaAway(t *testing.T) {
	t.Run("killed", func(t *testing.T) { recreatedWhileAway(t, false) })
	t.Run("paused", func(t *testing.T) { recreatedWhileAway(t, true) })
}

func recreatedWhileAway(t *testing.T, pause bool) {
	c := harness.StartCluster(t, 3)
	guardNodes(t, c)
	const topic = "recreated"
	// A follower of the quorum: the controller stays where it is.
	victim := otherNodes(3, c.AgreedController(opTimeout))[0]
	others := otherNodes(3, victim)
	assignment := [][]int32{append([]int32{victim}, others...)}
	createAssignedTopic(t, c, topic, assignment, minISR2())

	old := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Prefix: "old", Records: 1500, Pace: 200 * time.Microsecond})
	<-old.Done()
	old.Finish()
	waitSameLogs(t, c, topic, 0) // the victim holds every old record

	if pause {
		pauseNode(t, c.Node(victim))
	} else {
		c.Node(victim).Kill()
	}
	// Fenced (its heartbeats stopped), so out of the ISR, and the new
	// topic's leader will be another node.
	waitSeenBy(t, c, others, topic, 0, 2*time.Minute, fmt.Sprintf("ISR %v without %d", others, victim), func(st harness.PartitionState) bool {
		return slices.Equal(st.ISR, others)
	})

	adm := kadm.NewClient(c.Client())
	resp, err := adm.DeleteTopics(harness.Ctx(t, opTimeout), topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	harness.WaitFor(t, opTimeout, "the topic gone from the running nodes' metadata", func() bool {
		for _, id := range others {
			if _, err := c.Node(id).Partition(topic, 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
				return false
			}
		}
		return true
	})
	c.SendCreateAssignedTopic(topic, assignment, minISR2(), opTimeout)
	st := waitSeenBy(t, c, others, topic, 0, opTimeout, "a leader of the new topic", func(st harness.PartitionState) bool {
		return st.Leader > 0 && st.Leader != victim
	})
	t.Logf("topic re-created with %d away: leader %d, epoch %d, ISR %v", victim, st.Leader, st.LeaderEpoch, st.ISR)

	s := harness.StartAckStream(t, c, harness.StreamConfig{Topic: topic, Prefix: "new", Pace: 2 * time.Millisecond})
	s.WaitAcks(t, 300, 2*time.Minute, "acks of the new topic while the old replica is away")
	if pause {
		c.Node(victim).Resume()
	} else {
		c.Node(victim).Restart()
	}
	waitEveryNode(t, c, topic, 0, 2*time.Minute, "a full ISR", fullISR)

	// Make the returned replica the leader: the reads below then come
	// from its log.
	if code := electOne(t, c.Client(), 0, topic); code != 0 && code != kerr.ElectionNotNeeded.Code {
		t.Fatalf("preferred election: %v", kerr.ErrorForCode(code))
	}
	waitEveryNode(t, c, topic, 0, 2*time.Minute, fmt.Sprintf("leader %d with a full ISR", victim), func(st harness.PartitionState) bool {
		return st.Leader == victim && fullISR(st)
	})
	s.WaitMore(t, 200, 2*time.Minute, "acks under the returned replica's leadership")
	sent := s.Finish()
	if n := s.CheckExactlyOnce([]string{c.Node(victim).Addr}, 0); n != sent {
		t.Fatalf("%d records stored, %d sent", n, sent)
	}
	got := kcatAll(t, c.Node(victim), topic)
	if len(got) != sent {
		t.Fatalf("kcat read %d records from %d, want %d", len(got), victim, sent)
	}
	for off, v := range got {
		if want := "new-" + strconv.FormatInt(off, 10); v != want {
			t.Fatalf("kcat read %q at offset %d from %d, want %q", v, off, victim, want)
		}
	}
	batches := waitSameLogs(t, c, topic, 0)
	t.Logf("%d old records before; %d new ones read back by franz-go and kcat from %d, %d batches alike on every node",
		old.Count(), sent, victim, len(batches))
}

// kcatAll reads partition 0 of topic from the start to its end with kcat,
// bootstrapped on b only, and returns the values by offset.
func kcatAll(t *testing.T, b *harness.Broker, topic string) map[int64]string {
	t.Helper()
	requireKcat(t)
	out := clientOutput(t, "kcat", "-C", "-b", b.Addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")()
	got := map[int64]string{}
	for _, line := range strings.Split(out, "\n") {
		o, v, ok := strings.Cut(line, " ")
		off, err := strconv.ParseInt(o, 10, 64)
		if !ok || err != nil {
			t.Fatalf("kcat printed %q", line)
		}
		if _, dup := got[off]; dup {
			t.Fatalf("kcat read offset %d twice", off)
		}
		got[off] = v
	}
	return got
}
