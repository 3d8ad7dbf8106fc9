package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// partitionOn asks one node, directly, for a partition's metadata.
func partitionOn(b *harness.Broker, topic string, p int32) (kmsg.MetadataResponseTopicPartition, error) {
	var out kmsg.MetadataResponseTopicPartition
	parts, err := b.TopicMetadata(topic)
	if err != nil {
		return out, err
	}
	for _, mp := range parts {
		if mp.Partition == p {
			return mp, nil
		}
	}
	return out, fmt.Errorf("%s-%d not in the metadata of %s", topic, p, b.Addr)
}

// TestUncleanLeaderElection: a partition whose whole ISR is dead, with a
// live replica that is out of sync. With unclean.leader.election.enable
// false (Kafka's default) it stays offline: no leader, LEADER_NOT_AVAILABLE
// in every node's metadata, produce refused. With it true (as a topic
// config, from the start or set while offline), the controller elects the
// live replica, says in its log that data may be lost, and the partition
// takes writes again; the old leader, when it returns, truncates what the
// new leader never had, and the replicas converge on the new leader's log.
//
// The replica is forced out of sync while alive: the leader's client
// listener is behind a proxy (harness.StartProxiedCluster), which holds
// the follower's fetches, so that the leader drops it from the ISR after
// replica.lag.time.max.ms (1 s here) while its heartbeats keep it an
// unfenced, eligible broker. The leader then takes records the follower
// never gets (acks=all, committed by the ISR of one) and is killed -9.
func TestUncleanLeaderElection(t *testing.T) {
	c, proxies := harness.StartProxiedCluster(t, 3,
		"replica.lag.time.max.ms=1000",
		"auto.leader.rebalance.enable=false")
	const off, on = "unclean-off", "unclean-on"
	x, y := c.Node(1), c.Node(2)
	createAssignedTopic(t, c, off, [][]int32{{1, 2}}, nil)
	createAssignedTopic(t, c, on, [][]int32{{1, 2}}, map[string]*string{"unclean.leader.election.enable": kmsg.StringPtr("true")})
	topics := []string{off, on}

	synced := map[string]map[string]int64{}
	producer := acksAllProducer(c)
	for _, tp := range topics {
		synced[tp] = produceSyncEach(t, producer, tp, "synced-0", "synced-1", "synced-2")
	}
	for _, tp := range topics {
		// On the follower too, whatever the ISR said meanwhile.
		waitLogsAgreeOn(t, c, tp, 0, 1, 2)
	}

	// The follower falls out of the ISR; the leader commits records alone.
	proxies[0].Hold(harness.BothWays)
	for _, tp := range topics {
		c.WaitPartition(tp, 0, opTimeout, "the ISR shrunk to the leader", func(st harness.PartitionState) bool {
			return st.Leader == 1 && slices.Equal(st.ISR, []int32{1})
		})
	}
	onlyX := map[string]int64{}
	for _, tp := range topics {
		onlyX[tp] = produceDirect(t, x, tp, 0, -1, "only-x-0", "only-x-1")
	}
	outputs := make([]int, len(c.Nodes))
	for i, b := range c.Nodes {
		outputs[i] = logEnd(b)
	}
	x.Kill()
	killed := time.Now()
	proxies[0].Cut(harness.Refuse)

	// Enabled from the start: the live replica leads at once.
	c.WaitPartition(on, 0, opTimeout, "an unclean leader", func(st harness.PartitionState) bool { return st.Leader == 2 })
	tookOn := time.Since(killed)
	// Disabled: offline, however long it is watched (here for ten of the
	// controller's periodic unclean-election checks, one a second, once
	// every running node has applied the fence).
	waitAgreedPartition(t, c, off, 0, opTimeout, "offline", func(st harness.PartitionState) bool { return st.Leader == -1 })
	until := time.Now().Add(10 * time.Second)
	checks := 0
	for time.Now().Before(until) {
		for _, b := range c.Nodes[1:] {
			mp, err := partitionOn(b, off, 0)
			if err != nil {
				t.Fatalf("metadata of %s from node %s: %v", off, b.Addr, err)
			}
			if mp.Leader != -1 || mp.ErrorCode != kerr.LeaderNotAvailable.Code {
				t.Fatalf("%s-0 on node %s: leader %d, error %v after its only ISR member died, with unclean election disabled",
					off, b.Addr, mp.Leader, kerr.ErrorForCode(mp.ErrorCode))
			}
			checks++
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := produceCode(t, y, off, "refused"); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to %s-0 on the out-of-sync replica answered %v, want NOT_LEADER_OR_FOLLOWER", off, kerr.ErrorForCode(code))
	}
	t.Logf("%s elected its out-of-sync replica %v after the kill; %s stayed offline through %d metadata checks over 10 s",
		on, tookOn.Round(10*time.Millisecond), off, checks)

	// Enabling it on the offline topic elects the live replica.
	set := "true"
	adm := kadm.NewClient(c.Client())
	resp, err := adm.AlterTopicConfigs(harness.Ctx(t, opTimeout), []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: &set}}, off)
	if err == nil {
		_, err = resp.On(off, nil)
	}
	if err != nil {
		t.Fatalf("enable unclean election on %s: %v", off, err)
	}
	enabled := time.Now()
	c.WaitPartition(off, 0, opTimeout, "an unclean leader", func(st harness.PartitionState) bool { return st.Leader == 2 })
	t.Logf("%s elected its out-of-sync replica %v after the config change", off, time.Since(enabled).Round(10*time.Millisecond))
	for _, tp := range topics {
		var said []string
		for i, b := range c.Nodes {
			said = append(said, logLines(b, outputs[i], "unclean leader election", "topic="+tp)...)
		}
		if len(said) == 0 {
			t.Fatalf("no node logged the unclean election of %s-0 and what it may lose", tp)
		}
		t.Logf("%s: %s", tp, said[0])
	}

	after := map[string]map[string]int64{}
	for _, tp := range topics {
		after[tp] = produceSyncEach(t, producer, tp, "after-0", "after-1")
	}
	restarted := logEnd(x)
	proxies[0].Heal()
	x.Restart()
	for _, tp := range topics {
		c.WaitFullISR(tp, 0, 2*time.Minute)
		batches := waitLogsAgreeOn(t, c, tp, 0, 1, 2)
		got := readCommitted(t, c, tp, 0, batches[len(batches)-1].LastOffset+1)
		checkAcked(t, got, synced[tp], tp+": acknowledged while in sync")
		checkAcked(t, got, after[tp], tp+": acknowledged after the unclean election")
		for off, v := range got {
			if strings.HasPrefix(v, "only-x") {
				t.Fatalf("%s: %s, written only to the dead leader, is at offset %d", tp, v, off)
			}
		}
		cuts := logLines(x, restarted, "truncated by leader epoch", "topic="+tp)
		if !slices.ContainsFunc(cuts, func(l string) bool { return truncatedTo(l) <= onlyX[tp] }) {
			t.Fatalf("%s: the old leader did not truncate the records only it had (from offset %d): %q", tp, onlyX[tp], cuts)
		}
		t.Logf("%s: the old leader lost its records from offset %d: %s", tp, onlyX[tp], cuts[0])
	}
}

// produceCode sends one record to b directly and returns the error code.
func produceCode(t *testing.T, b *harness.Broker, topic, value string) int16 {
	t.Helper()
	return produceOn(t, b, topic, 0, -1, value).ErrorCode
}
