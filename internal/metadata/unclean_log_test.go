package metadata

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log sink safe for Raft's goroutines and the test's.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An unclean election made by the periodic call (the topic's config was
// switched on while it was offline) is logged as one made after a fence:
// with the partition, the new leader and the ISR whose records may be
// lost. Before, only the fence, unfence and registration paths logged.
func TestUncleanElectionLoggedOnEveryPath(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(t.TempDir())
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := openLeader(t, cfg)
	ctx := testCtx(t)
	epochs := liveBrokers(t, c, 1, 2)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "late", Assignments: map[int32][]int32{0: {1, 2}},
		NumPartitions: -1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	top := c.Image().TopicByName("late")
	p := top.Partitions[0]
	if _, err := c.AlterPartition(ctx, AlterPartitionRequest{BrokerID: 1, BrokerEpoch: epochs[1], Updates: []ISRUpdate{
		{TopicID: top.ID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: ISRMembers([]int32{1})}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.FenceBroker(ctx, 1, epochs[1]); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Image().Partition("late", 0); p.Leader != -1 {
		t.Fatalf("late-0 = %+v, want offline (unclean election is off)", p)
	}
	on := "true"
	if err := c.AlterTopicConfigs(ctx, "late", map[string]*string{"unclean.leader.election.enable": &on}, false, false); err != nil {
		t.Fatal(err)
	}
	res, err := c.ElectUncleanLeaders(ctx)
	if err != nil || len(res) != 1 || res[0].Leader != 2 || res[0].Err != nil {
		t.Fatalf("ElectUncleanLeaders = %+v, %v; want late-0 led by 2", res, err)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "unclean leader election") && strings.Contains(l, "topic=late") {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "partition=0", "leader=2", "old_isr=[1]", "may be lost"} {
		if !strings.Contains(line, want) {
			t.Fatalf("the election's log line %q lacks %q; the log:\n%s", line, want, logs.String())
		}
	}
}
