package metadata

import (
	"testing"
)

func names(ts []*Topic) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestDiffTopics(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	for _, name := range []string{"keep", "grow", "drop", "again"} {
		if _, err := c.CreateTopic(ctx, CreateTopic{Name: name, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
	}
	prev := c.Image()
	if d := DiffTopics(prev, prev); !d.Empty() {
		t.Fatalf("image differs from itself: %+v", d)
	}
	if err := c.CreatePartitions(ctx, "grow", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, "drop"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "again", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "fresh", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	d := DiffTopics(prev, c.Image())
	check := func(what string, got []*Topic, want ...string) {
		t.Helper()
		g := names(got)
		if len(g) != len(want) {
			t.Fatalf("%s = %v, want %v", what, g, want)
		}
		for i := range want {
			if g[i] != want[i] {
				t.Fatalf("%s = %v, want %v", what, g, want)
			}
		}
	}
	check("Added", d.Added, "again", "fresh")
	check("Removed", d.Removed, "again", "drop")
	check("Changed", d.Changed, "grow")
	if d.Removed[0].ID == d.Added[0].ID {
		t.Fatal("recreated topic kept its id")
	}
}

func TestDiffBrokers(t *testing.T) {
	m := newMachine(t)
	epochs := m.live(1, 2)
	m.topic("t", 1, []int32{1, 2}, []int32{2, 1})
	prev := m.im
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{1, epochs[1]}})
	m.register(3, 1, "")
	d := DiffBrokers(prev, m.im)
	if len(d.Added) != 1 || d.Added[0].ID != 3 || len(d.Changed) != 1 || len(d.Removed) != 0 {
		t.Fatalf("delta %+v", d)
	}
	if ch := d.Changed[0]; ch.New.ID != 1 || !ch.Fenced() || ch.Unfenced() || ch.Restarted() {
		t.Fatalf("change %+v", ch)
	}
	// The topic changed too: both partitions lost broker 1 from the ISR.
	td := DiffTopics(prev, m.im)
	if len(td.Changed) != 1 {
		t.Fatalf("topic delta %+v", td)
	}
	if got := ChangedPartitions(prev.TopicByName("t"), td.Changed[0]); len(got) != 2 {
		t.Fatalf("changed partitions %v", got)
	}
	prev = m.im
	e := m.register(1, 2, "")
	m.ok(cmdUnfenceBroker, unfenceBrokerCmd{brokerRef{1, e}})
	d = DiffBrokers(prev, m.im)
	if len(d.Changed) != 1 || !d.Changed[0].Restarted() || !d.Changed[0].Unfenced() {
		t.Fatalf("restart delta %+v", d)
	}
	// Unfencing broker 1 elected nothing (it is in no ISR): no topic change.
	if td := DiffTopics(prev, m.im); !td.Empty() {
		t.Fatalf("topics changed: %+v", td)
	}
	if got := ChangedPartitions(nil, m.im.TopicByName("t")); len(got) != 2 {
		t.Fatalf("ChangedPartitions(nil) = %v", got)
	}
}

func TestBrokerQueries(t *testing.T) {
	m := newMachine(t)
	epochs := m.live(1, 2, 3)
	m.topic("a", 1, []int32{1, 2}, []int32{2, 3})
	m.topic("b", 2, []int32{3, 1})
	led, followed := m.im.BrokerPartitions(1)
	if len(led) != 1 || led[0] != (PartitionRef{Topic: "a", TopicID: [16]byte{1}, Partition: 0}) ||
		len(followed) != 1 || followed[0].Topic != "b" {
		t.Fatalf("broker 1 leads %v follows %v", led, followed)
	}
	m.ok(cmdFenceBroker, fenceBrokerCmd{brokerRef{3, epochs[3]}})
	if live := m.im.LiveBrokers(); len(live) != 2 || live[0].ID != 1 || live[1].ID != 2 {
		t.Fatalf("live %v", live)
	}
	if m.im.BrokerEligible(3) || !m.im.BrokerEligible(2) || m.im.BrokerEligible(9) {
		t.Fatal("BrokerEligible")
	}
	// b-0 lost its leader 3 to 1; a-1 lost follower 3.
	if led, _ := m.im.BrokerPartitions(1); len(led) != 2 {
		t.Fatalf("broker 1 leads %v", led)
	}
	if got := m.im.UnderReplicatedPartitions(); len(got) != 2 {
		t.Fatalf("under-replicated %v", got)
	}
	if got := m.im.OfflinePartitions(); len(got) != 0 {
		t.Fatalf("offline %v", got)
	}
	under := m.im.UnderMinISRPartitions(func(t *Topic) int {
		if t.Name == "a" {
			return 2
		}
		return 1
	})
	if len(under) != 1 || under[0].Topic != "a" || under[0].Partition != 1 {
		t.Fatalf("under min ISR %v", under)
	}
}

// TestAliveChanged: fencing or unfencing a broker changes the alive set;
// a topic's creation does not.
func TestAliveChanged(t *testing.T) {
	c := newTestController(t, 2)
	ctx := testCtx(t)
	prev := c.Image()
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if AliveChanged(prev, c.Image()) {
		t.Fatal("a topic's creation changed the alive brokers")
	}
	prev = c.Image()
	b, _ := prev.Broker(2)
	if err := c.FenceBroker(ctx, 2, b.Epoch); err != nil {
		t.Fatal(err)
	}
	if !AliveChanged(prev, c.Image()) {
		t.Fatal("fencing broker 2 did not change the alive brokers")
	}
}
