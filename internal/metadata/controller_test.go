package metadata

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestCreateAndDeleteTopic(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	if id := c.Image().ClusterID(); len(id) != 22 {
		t.Fatalf("cluster id %q, want 22 base64 characters", id)
	}
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "orders", NumPartitions: 3, ReplicationFactor: -1,
		Configs: map[string]string{"retention.ms": "1000"}})
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if top.ID == ([16]byte{}) || len(top.Partitions) != 3 {
		t.Fatalf("created topic %+v", top)
	}
	im := c.Image()
	if got := im.TopicByName("orders"); got == nil || got.ID != top.ID {
		t.Fatalf("TopicByName = %+v", got)
	}
	if got := im.TopicByID(top.ID); got == nil || got.Name != "orders" {
		t.Fatalf("TopicByID = %+v", got)
	}
	for p := int32(0); p < 3; p++ {
		part, ok := im.Partition("orders", p)
		if !ok || part.Partition != p || part.Leader != 1 || part.LeaderEpoch != 0 ||
			!slices.Equal(part.Replicas, []int32{1}) || !slices.Equal(part.ISR, []int32{1}) {
			t.Fatalf("partition %d = %+v, %v", p, part, ok)
		}
	}
	if _, ok := im.Partition("orders", 3); ok {
		t.Fatal("partition 3 exists")
	}
	if got := im.TopicByName("orders").Configs["retention.ms"]; got != "1000" {
		t.Fatalf("retention.ms = %q", got)
	}

	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "orders", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v, want ErrTopicExists", err)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "apples", NumPartitions: -1, ReplicationFactor: -1}); err != nil {
		t.Fatalf("create apples: %v", err)
	}
	if got := c.Image().SortedTopicNames(); !slices.Equal(got, []string{"apples", "orders"}) {
		t.Fatalf("SortedTopicNames = %v", got)
	}

	if err := c.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if c.Image().TopicByName("orders") != nil || c.Image().TopicByID(top.ID) != nil {
		t.Fatal("orders still there after delete")
	}
	if err := c.DeleteTopic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v, want ErrUnknownTopic", err)
	}
	again, err := c.CreateTopic(ctx, CreateTopic{Name: "orders", NumPartitions: 1, ReplicationFactor: 1})
	if err != nil {
		t.Fatalf("recreate: %v", err)
	}
	if again.ID == top.ID {
		t.Fatal("recreated topic reuses the old id")
	}
	// Old image snapshots are untouched by later changes.
	if im.TopicByName("orders").ID != top.ID || im.TopicByName("apples") != nil {
		t.Fatal("an earlier image changed")
	}
}

func TestPlacementAcrossBrokers(t *testing.T) {
	c := newTestController(t, 3)
	ctx := testCtx(t)
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "spread", NumPartitions: 6, ReplicationFactor: 3})
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	leaders := map[int32]int{}
	for _, p := range top.Partitions {
		if len(p.Replicas) != 3 || p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) {
			t.Fatalf("partition %+v", p)
		}
		sorted := slices.Sorted(slices.Values(p.Replicas))
		if !slices.Equal(sorted, []int32{1, 2, 3}) {
			t.Fatalf("partition %d replicas %v", p.Partition, p.Replicas)
		}
		leaders[p.Leader]++
	}
	for id := int32(1); id <= 3; id++ {
		if leaders[id] != 2 {
			t.Fatalf("leaders per broker %v, want 2 each", leaders)
		}
	}
	manual, err := c.CreateTopic(ctx, CreateTopic{Name: "manual", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]int32{0: {3, 1}, 1: {2, 3}}})
	if err != nil {
		t.Fatalf("manual CreateTopic: %v", err)
	}
	if !slices.Equal(manual.Partitions[0].Replicas, []int32{3, 1}) || manual.Partitions[1].Leader != 2 {
		t.Fatalf("manual assignment not kept: %+v", manual.Partitions)
	}
}

func TestCreateTopicValidation(t *testing.T) {
	c := newTestController(t, 2)
	ctx := testCtx(t)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create a.b: %v", err)
	}
	c.cfg.ValidateTopicConfig = func(k, v string) error {
		if k == "retention.ms" && v == "soon" {
			return errors.New("retention.ms must be a number")
		}
		return nil
	}
	long := string(make([]byte, 250))
	cases := []struct {
		name string
		req  CreateTopic
		want error
	}{
		{"empty name", CreateTopic{Name: "", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"slash", CreateTopic{Name: "a/b", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"dotdot", CreateTopic{Name: "..", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"too long", CreateTopic{Name: long, NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"collision", CreateTopic{Name: "a_b", NumPartitions: 1, ReplicationFactor: 1}, ErrInvalidTopic},
		{"exists", CreateTopic{Name: "a.b", NumPartitions: 1, ReplicationFactor: 1}, ErrTopicExists},
		{"zero partitions", CreateTopic{Name: "t", NumPartitions: 0, ReplicationFactor: 1}, ErrInvalidPartitions},
		{"too many partitions", CreateTopic{Name: "t", NumPartitions: maxPartitions + 1, ReplicationFactor: 1}, ErrInvalidPartitions},
		{"rf 0", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 0}, ErrInvalidReplicationFactor},
		{"rf above brokers", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 3}, ErrInvalidReplicationFactor},
		{"unknown broker", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1, 7}}}, ErrInvalidReplicaAssignment},
		{"duplicate replica", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {2, 2}}}, ErrInvalidReplicaAssignment},
		{"empty replicas", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {}}}, ErrInvalidReplicaAssignment},
		{"gap in partitions", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1}, 2: {2}}}, ErrInvalidReplicaAssignment},
		{"uneven rf", CreateTopic{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1}, 1: {1, 2}}}, ErrInvalidReplicaAssignment},
		{"assignment and count", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: -1,
			Assignments: map[int32][]int32{0: {1}}}, ErrInvalidRequest},
		{"bad config", CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1,
			Configs: map[string]string{"retention.ms": "soon"}}, ErrInvalidConfig},
	}
	before := c.Image()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, validateOnly := range []bool{false, true} {
				req := tc.req
				req.ValidateOnly = validateOnly
				if _, err := c.CreateTopic(ctx, req); !errors.Is(err, tc.want) {
					t.Fatalf("validateOnly=%v: err %v, want %v", validateOnly, err, tc.want)
				}
			}
		})
	}
	if c.Image() != before {
		t.Fatal("rejected requests changed the image")
	}
}

func TestValidateOnlyChangesNothing(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "base", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	before := c.Image()
	preview, err := c.CreateTopic(ctx, CreateTopic{Name: "new", NumPartitions: 4, ReplicationFactor: 1, ValidateOnly: true})
	if err != nil {
		t.Fatalf("validate-only create: %v", err)
	}
	if len(preview.Partitions) != 4 || preview.ID != ([16]byte{}) {
		t.Fatalf("preview %+v", preview)
	}
	if err := c.CreatePartitions(ctx, "base", 5, nil, true); err != nil {
		t.Fatalf("validate-only create partitions: %v", err)
	}
	if err := c.AlterTopicConfigs(ctx, "base", map[string]*string{"retention.ms": strp("5")}, false, true); err != nil {
		t.Fatalf("validate-only alter: %v", err)
	}
	if c.Image() != before {
		t.Fatal("validate-only requests changed the image")
	}
}

func TestCreatePartitions(t *testing.T) {
	c := newTestController(t, 2)
	ctx := testCtx(t)
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "grow", NumPartitions: 1, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(ctx, "grow", 3, nil, false); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	got := c.Image().TopicByName("grow")
	if got.ID != top.ID || len(got.Partitions) != 3 {
		t.Fatalf("after growth: %+v", got)
	}
	for i, p := range got.Partitions {
		if int(p.Partition) != i || len(p.Replicas) != 2 || p.Leader != p.Replicas[0] {
			t.Fatalf("partition %d = %+v", i, p)
		}
	}
	if err := c.CreatePartitions(ctx, "grow", 4, [][]int32{{2, 1}}, false); err != nil {
		t.Fatalf("CreatePartitions manual: %v", err)
	}
	if p, _ := c.Image().Partition("grow", 3); !slices.Equal(p.Replicas, []int32{2, 1}) {
		t.Fatalf("manual partition 3 = %+v", p)
	}
	cases := []struct {
		name        string
		topic       string
		total       int32
		assignments [][]int32
		want        error
	}{
		{"unknown", "nope", 2, nil, ErrUnknownTopic},
		{"same count", "grow", 4, nil, ErrInvalidPartitions},
		{"fewer", "grow", 2, nil, ErrInvalidPartitions},
		{"too many", "grow", maxPartitions + 1, nil, ErrInvalidPartitions},
		{"wrong assignment count", "grow", 6, [][]int32{{1, 2}}, ErrInvalidReplicaAssignment},
		{"wrong rf", "grow", 5, [][]int32{{1}}, ErrInvalidReplicaAssignment},
		{"unknown broker", "grow", 5, [][]int32{{1, 9}}, ErrInvalidReplicaAssignment},
	}
	before := c.Image()
	for _, tc := range cases {
		if err := c.CreatePartitions(ctx, tc.topic, tc.total, tc.assignments, false); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	if c.Image() != before {
		t.Fatal("rejected requests changed the image")
	}
}

func TestAlterTopicConfigs(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "cfg", NumPartitions: 1, ReplicationFactor: 1,
		Configs: map[string]string{"cleanup.policy": "compact", "retention.ms": "1"}}); err != nil {
		t.Fatal(err)
	}
	configs := func() map[string]string { return c.Image().TopicByName("cfg").Configs }
	if err := c.AlterTopicConfigs(ctx, "cfg", map[string]*string{"retention.ms": strp("2"), "segment.bytes": strp("1024"), "cleanup.policy": nil}, false, false); err != nil {
		t.Fatalf("incremental alter: %v", err)
	}
	if want := map[string]string{"retention.ms": "2", "segment.bytes": "1024"}; !maps.Equal(configs(), want) {
		t.Fatalf("configs %v, want %v", configs(), want)
	}
	if err := c.AlterTopicConfigs(ctx, "cfg", map[string]*string{"max.message.bytes": strp("100")}, true, false); err != nil {
		t.Fatalf("replace-all alter: %v", err)
	}
	if want := map[string]string{"max.message.bytes": "100"}; !maps.Equal(configs(), want) {
		t.Fatalf("configs %v, want %v", configs(), want)
	}
	if err := c.AlterTopicConfigs(ctx, "nope", nil, false, false); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	c.cfg.ValidateTopicConfig = func(k, v string) error { return errors.New("nothing is valid") }
	if err := c.AlterTopicConfigs(ctx, "cfg", map[string]*string{"retention.ms": strp("3")}, false, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("invalid value: %v", err)
	}
	if err := c.AlterTopicConfigs(ctx, "cfg", map[string]*string{"": nil}, false, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestChangesFires(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	ch := c.Changes()
	before := c.Image()
	select {
	case <-ch:
		t.Fatal("Changes fired with no change")
	default:
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "watched", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatal("Changes did not fire after CreateTopic")
	}
	if c.Image() == before || c.Image().TopicByName("watched") == nil {
		t.Fatal("image after change lacks the topic")
	}
	if c.Changes() == ch {
		t.Fatal("Changes handed out the closed channel again")
	}
}

func TestProducerIDBlocks(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	first, err := c.AllocateProducerIDs(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.AllocateProducerIDs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if second != first+1000 || c.Image().NextProducerID() != second+10 {
		t.Fatalf("blocks at %d and %d, next %d", first, second, c.Image().NextProducerID())
	}
	for _, n := range []int64{0, -1, maxProducerIDBlock + 1} {
		if _, err := c.AllocateProducerIDs(ctx, n); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("block of %d: %v", n, err)
		}
	}
}

func TestNotControllerWithoutQuorum(t *testing.T) {
	cfg := testConfig(t.TempDir())
	// A second voter that never answers: no quorum, so never a leader.
	cfg.Voters = map[int32]string{1: "127.0.0.1:0", 2: "127.0.0.1:1"}
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t)
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "t", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrNotController) {
		t.Fatalf("CreateTopic: %v, want ErrNotController", err)
	}
	if _, err := c.AllocateProducerIDs(ctx, 1); !errors.Is(err, ErrNotController) {
		t.Fatalf("AllocateProducerIDs: %v, want ErrNotController", err)
	}
	if err := c.VerifyLeader(ctx); !errors.Is(err, ErrNotController) {
		t.Fatalf("VerifyLeader: %v, want ErrNotController", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := c.WaitLeader(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitLeader: %v, want deadline exceeded", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.DeleteTopic(ctx, "t"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}
