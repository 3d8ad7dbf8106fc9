package metadata

import (
	"bytes"
	"fmt"
	"testing"
)

// reopen closes c and opens a new controller on the same directory,
// waiting until it leads and has replayed everything.
func reopen(t *testing.T, c *Controller) *Controller {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openLeader(t, c.cfg)
}

func TestReopenKeepsEverything(t *testing.T) {
	c := newTestController(t, 2)
	ctx := testCtx(t)
	ids := map[string][16]byte{}
	for i := range 5 {
		name := fmt.Sprintf("topic-%d", i)
		top, err := c.CreateTopic(ctx, CreateTopic{Name: name, NumPartitions: int32(i + 1), ReplicationFactor: 2})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = top.ID
	}
	if err := c.DeleteTopic(ctx, "topic-0"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(ctx, "topic-1", 4, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterTopicConfigs(ctx, "topic-2", map[string]*string{"retention.ms": strp("60000")}, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AllocateProducerIDs(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	want := stateBytes(t, c.Image())
	clusterID := c.Image().ClusterID()

	c2 := reopen(t, c)
	if got := stateBytes(t, c2.Image()); !bytes.Equal(got, want) {
		t.Fatalf("state after reopen differs:\n got %s\nwant %s", got, want)
	}
	if c2.Image().ClusterID() != clusterID {
		t.Fatal("cluster id changed across restart")
	}
	for name, id := range ids {
		if name == "topic-0" {
			continue
		}
		if got := c2.Image().TopicByName(name); got == nil || got.ID != id {
			t.Fatalf("topic %s: id not stable across restart", name)
		}
	}
	// The reopened node still accepts changes.
	if _, err := c2.CreateTopic(ctx, CreateTopic{Name: "after", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create after reopen: %v", err)
	}
}

func TestReopenFromSnapshotAndTruncatedLog(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.TrailingLogs = 10
	c := openLeader(t, cfg)
	ctx := testCtx(t)
	if err := c.RegisterBroker(ctx, Broker{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		if _, err := c.CreateTopic(ctx, CreateTopic{Name: fmt.Sprintf("snap-%03d", i), NumPartitions: 2, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := c.AlterTopicConfigs(ctx, fmt.Sprintf("snap-%03d", i), map[string]*string{"retention.ms": strp(fmt.Sprint(i))}, false, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	// Commands after the snapshot are replayed from the log tail.
	for i := range 20 {
		if err := c.DeleteTopic(ctx, fmt.Sprintf("snap-%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AllocateProducerIDs(ctx, 77); err != nil {
		t.Fatal(err)
	}
	first, err := c.store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if first <= 1 {
		t.Fatalf("log not truncated after snapshot: first index %d", first)
	}
	want := stateBytes(t, c.Image())

	c2 := reopen(t, c)
	if got := stateBytes(t, c2.Image()); !bytes.Equal(got, want) {
		t.Fatalf("state restored from snapshot+log differs:\n got %.300s\nwant %.300s", got, want)
	}
	if n := c2.Image().NumTopics(); n != 130 {
		t.Fatalf("%d topics after restore, want 130", n)
	}
}

func TestSnapshotThresholdTriggersSnapshot(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.SnapshotThreshold = 20
	cfg.TrailingLogs = 5
	cfg.SnapshotInterval = 20 * 1e6 // 20ms
	c := openLeader(t, cfg)
	ctx := testCtx(t)
	// Keep applying until raft has taken a snapshot on its own and
	// compacted the log; poll, bounded by the test deadline.
	for i := 0; ; i++ {
		if _, err := c.AllocateProducerIDs(ctx, 1); err != nil {
			t.Fatal(err)
		}
		first, err := c.store.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		if first > 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no automatic snapshot after %d commands", i)
		}
	}
	next := c.Image().NextProducerID()
	c2 := reopen(t, c)
	if got := c2.Image().NextProducerID(); got != next {
		t.Fatalf("next producer id %d after restore, want %d", got, next)
	}
}

func TestProducerIDsNeverOverlapAcrossRestarts(t *testing.T) {
	c := newTestController(t, 1)
	type block struct{ first, n int64 }
	var blocks []block
	for round := range 3 {
		ctx := testCtx(t)
		for i := range 10 {
			n := int64(1 + i*round*37)
			first, err := c.AllocateProducerIDs(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, block{first, n})
		}
		c = reopen(t, c)
	}
	for i, a := range blocks {
		for _, b := range blocks[i+1:] {
			if a.first < b.first+b.n && b.first < a.first+a.n {
				t.Fatalf("blocks [%d,+%d) and [%d,+%d) overlap", a.first, a.n, b.first, b.n)
			}
		}
	}
}

func TestConfiguredClusterIDIsRecordedOnce(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.ClusterID = "MkU3OEVBNTcwNTJENDM2Qk"
	c := openLeader(t, cfg)
	if got := c.Image().ClusterID(); got != cfg.ClusterID {
		t.Fatalf("cluster id %q, want %q", got, cfg.ClusterID)
	}
	// A later start cannot change it. The changed config is a copy given to
	// the new controller: the running one still reads its own.
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	cfg2 := c.cfg
	cfg2.ClusterID = "SomethingElseEntirely0"
	c2 := openLeader(t, cfg2)
	if got := c2.Image().ClusterID(); got != cfg.ClusterID {
		t.Fatalf("cluster id %q after restart, want %q", got, cfg.ClusterID)
	}
}
