package metadata

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// TestPartitionLimits: CreateTopic and CreatePartitions refuse, validate-only
// included, what would exceed max.partitions or max.broker.partitions;
// internal topics are exempt but count.
func TestPartitionLimits(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Limits = PartitionLimits{MaxBrokerPartitions: 10, MaxPartitions: 12}
	c := openLeader(t, cfg)
	ctx := testCtx(t)
	for id := int32(1); id <= 2; id++ {
		if err := c.RegisterBroker(ctx, Broker{ID: id, Host: "127.0.0.1", Port: 9090 + id}); err != nil {
			t.Fatal(err)
		}
	}
	// 6 partitions x 2 replicas: 6 replicas on each broker.
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "a", NumPartitions: 6, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	for _, validate := range []bool{true, false} {
		// 5 more x 2 replicas: 11 on each broker > 10.
		_, err := c.CreateTopic(ctx, CreateTopic{Name: "b", NumPartitions: 5, ReplicationFactor: 2, ValidateOnly: validate})
		if !errors.Is(err, ErrPolicyViolation) {
			t.Fatalf("validateOnly=%v: over max.broker.partitions: %v, want ErrPolicyViolation", validate, err)
		}
		// 7 more partitions: 13 in the cluster > 12.
		_, err = c.CreateTopic(ctx, CreateTopic{Name: "b", NumPartitions: 7, ReplicationFactor: 1, ValidateOnly: validate})
		if !errors.Is(err, ErrPolicyViolation) {
			t.Fatalf("validateOnly=%v: over max.partitions: %v, want ErrPolicyViolation", validate, err)
		}
		if err := c.CreatePartitions(ctx, "a", 11, nil, validate); !errors.Is(err, ErrPolicyViolation) {
			t.Fatalf("validateOnly=%v: grow over max.broker.partitions: %v, want ErrPolicyViolation", validate, err)
		}
	}
	if c.Image().TopicByName("b") != nil || len(c.Image().TopicByName("a").Partitions) != 6 {
		t.Fatal("a refused change was applied")
	}
	// Up to the limits is fine: 2 more x 2 replicas makes 8 per broker, 8 partitions.
	if err := c.CreatePartitions(ctx, "a", 8, nil, false); err != nil {
		t.Fatal(err)
	}
	// An internal topic goes past them, and then counts.
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "__consumer_offsets", NumPartitions: 5, ReplicationFactor: 1, Internal: true}); err != nil {
		t.Fatalf("internal topic: %v", err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "c", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrPolicyViolation) {
		t.Fatalf("after the internal topic: %v, want ErrPolicyViolation (13 partitions)", err)
	}
}

// TestPartitionLimitsCheckedOnApply: two commands that each fit when
// proposed cannot together exceed the limits they carry.
func TestPartitionLimitsCheckedOnApply(t *testing.T) {
	f := seededFSM(t) // topic t: 2 partitions, 2 replicas each
	limits := &PartitionLimits{MaxPartitions: 3}
	first := mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "x", ID: [16]byte{3}, Assignments: [][]int32{{1}}, Limits: limits})
	second := mustCommand(t, cmdCreateTopic, createTopicCmd{Name: "y", ID: [16]byte{4}, Assignments: [][]int32{{2}}, Limits: limits})
	if res := f.Apply(&raft.Log{Index: 10, Data: first}).(applyResult); res.err != nil {
		t.Fatal(res.err)
	}
	if res := f.Apply(&raft.Log{Index: 11, Data: second}).(applyResult); !errors.Is(res.err, ErrPolicyViolation) {
		t.Fatalf("second create: %v, want ErrPolicyViolation", res.err)
	}
	grow := mustCommand(t, cmdCreatePartitions, createPartitionsCmd{Name: "t", ID: [16]byte{1}, Total: 3,
		Assignments: [][]int32{{1, 2}}, Limits: &PartitionLimits{MaxBrokerPartitions: 3}})
	if res := f.Apply(&raft.Log{Index: 12, Data: grow}).(applyResult); !errors.Is(res.err, ErrPolicyViolation) {
		t.Fatalf("grow: %v, want ErrPolicyViolation (broker 1 would hold 4 replicas)", res.err)
	}
}
