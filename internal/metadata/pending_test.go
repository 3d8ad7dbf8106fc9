package metadata

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestCreateTopicPrepareHidesUntilActivated: while Prepare runs, the
// topic reserves its name but no reader sees it; afterwards it is visible.
func TestCreateTopicPrepareHidesUntilActivated(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	var during *Image
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "atomic", NumPartitions: 3, ReplicationFactor: 1,
		Prepare: func(_ context.Context, pt *Topic) error {
			during = c.Image()
			if !pt.Pending || len(pt.Partitions) != 3 {
				t.Errorf("Prepare got %+v, want a pending topic with 3 partitions", pt)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if during.TopicByName("atomic") != nil || during.TopicByID(top.ID) != nil || during.NumTopics() != 0 ||
		len(during.SortedTopicNames()) != 0 {
		t.Fatal("a pending topic is visible to readers")
	}
	if all := during.TopicsWithPending(); len(all) != 1 || all[0].Name != "atomic" {
		t.Fatalf("TopicsWithPending = %v, want the pending topic", all)
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "atomic", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("create over an active topic: %v, want ErrTopicExists", err)
	}
	if got := c.Image().TopicByName("atomic"); got == nil || got.Pending || got.ID != top.ID {
		t.Fatalf("after activation: %+v", got)
	}
}

// TestCreateTopicPrepareFailureCreatesNothing: a failed Prepare leaves no
// trace, and the name can be used again.
func TestCreateTopicPrepareFailureCreatesNothing(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	boom := errors.New("cannot open replicas")
	_, err := c.CreateTopic(ctx, CreateTopic{Name: "doomed", NumPartitions: 2, ReplicationFactor: 1,
		Prepare: func(context.Context, *Topic) error { return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the Prepare error", err)
	}
	im := c.Image()
	if len(im.TopicsWithPending()) != 0 {
		t.Fatalf("topics left after a failed creation: %v", im.TopicsWithPending())
	}
	if _, err := c.CreateTopic(ctx, CreateTopic{Name: "doomed", NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create again: %v", err)
	}
}

// TestOrphanedPendingTopicIsAborted: a pending topic whose creator is gone
// (here: proposed directly, as a crashed creator leaves it) is aborted by
// the sweep, also after a restart.
func TestOrphanedPendingTopicIsAborted(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	orphan := createTopicCmd{Name: "orphan", ID: [16]byte{7}, Assignments: [][]int32{{1}}, Pending: true}
	if _, err := c.propose(ctx, cmdCreateTopic, orphan); err != nil {
		t.Fatal(err)
	}
	c2 := reopen(t, c)
	waitNoTopics(t, c2)

	// And without a restart, on the next sweep.
	orphan.ID = [16]byte{8}
	if _, err := c2.propose(ctx, cmdCreateTopic, orphan); err != nil {
		t.Fatal(err)
	}
	c2.requestSweep()
	waitNoTopics(t, c2)
}

func waitNoTopics(t *testing.T, c *Controller) {
	t.Helper()
	ctx := testCtx(t)
	for {
		ch := c.Changes()
		if len(c.Image().TopicsWithPending()) == 0 {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("pending topics never aborted: %v", c.Image().TopicsWithPending())
		}
	}
}

// TestPendingCommands: activate and abort touch only pending topics, and
// other commands do not see pending ones.
func TestPendingCommands(t *testing.T) {
	f := seededFSM(t)
	apply := func(typ cmdType, p any) error {
		return f.Apply(&raft.Log{Index: f.current().Index() + 1, Data: mustCommand(t, typ, p)}).(applyResult).err
	}
	if err := apply(cmdActivateTopic, topicRefCmd{Name: "t", ID: [16]byte{1}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("activate an active topic: %v", err)
	}
	if err := apply(cmdAbortTopic, topicRefCmd{Name: "t", ID: [16]byte{1}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("abort an active topic: %v", err)
	}
	if err := apply(cmdCreateTopic, createTopicCmd{Name: "p", ID: [16]byte{5}, Assignments: [][]int32{{1}}, Pending: true}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		typ cmdType
		p   any
	}{
		{cmdDeleteTopic, deleteTopicCmd{Name: "p", ID: [16]byte{5}}},
		{cmdCreatePartitions, createPartitionsCmd{Name: "p", ID: [16]byte{5}, Total: 2, Assignments: [][]int32{{1}}}},
		{cmdAlterConfigs, alterConfigsCmd{Name: "p", ID: [16]byte{5}, Set: map[string]*string{"a": strp("b")}}},
	} {
		if err := apply(bad.typ, bad.p); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("%s on a pending topic: %v, want ErrUnknownTopic", bad.typ, err)
		}
	}
	if err := apply(cmdActivateTopic, topicRefCmd{Name: "p", ID: [16]byte{6}}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("activate by a wrong id: %v", err)
	}
	if err := apply(cmdActivateTopic, topicRefCmd{Name: "p", ID: [16]byte{5}}); err != nil {
		t.Fatal(err)
	}
	if f.current().TopicByName("p") == nil {
		t.Fatal("activated topic not visible")
	}
	if err := apply(cmdAbortTopic, topicRefCmd{Name: "p", ID: [16]byte{5}}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("abort after activation: %v", err)
	}
}

// TestPendingTopicSurvivesSnapshot: a snapshot keeps pending topics, so a
// new leader can abort them.
func TestPendingTopicSurvivesSnapshot(t *testing.T) {
	f := seededFSM(t)
	res := f.Apply(&raft.Log{Index: 9, Data: mustCommand(t, cmdCreateTopic,
		createTopicCmd{Name: "p", ID: [16]byte{5}, Assignments: [][]int32{{1}}, Pending: true})}).(applyResult)
	if res.err != nil {
		t.Fatal(res.err)
	}
	var buf memSink
	if err := encodeSnapshot(&buf, f.current()); err != nil {
		t.Fatal(err)
	}
	im, err := decodeSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	all := im.TopicsWithPending()
	if len(all) != 2 || !all[0].Pending || all[0].Name != "p" || im.TopicByName("p") != nil {
		t.Fatalf("after a snapshot round trip: %+v", all)
	}
}

// TestSlowPrepareStillActivates: a Prepare that takes longer than the
// activation timeout, and than the request's deadline, still ends in a
// created topic: the activation gets its own time after Prepare.
func TestSlowPrepareStillActivates(t *testing.T) {
	cfg := testConfig(t.TempDir())
	// Long enough for one Raft apply on a loaded machine (100 ms timed out
	// once at load 17), short enough to keep the test quick.
	cfg.PendingTimeout = time.Second
	c := openLeader(t, cfg)
	if err := c.RegisterBroker(testCtx(t), Broker{ID: 1, Host: "127.0.0.1", Port: 9091}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	top, err := c.CreateTopic(ctx, CreateTopic{Name: "slow", NumPartitions: 1, ReplicationFactor: 1,
		Prepare: func(pctx context.Context, _ *Topic) error {
			// Slow work, as opening thousands of logs is; the sleep is
			// the work, not a wait for a condition.
			time.Sleep(cfg.PendingTimeout * 3 / 2)
			if pctx.Err() != nil {
				t.Errorf("Prepare's context done: %v", pctx.Err())
			}
			cancel() // and the request gives up meanwhile
			return nil
		}})
	if err != nil {
		t.Fatalf("slow prepare: %v", err)
	}
	if got := c.Image().TopicByName("slow"); got == nil || got.ID != top.ID {
		t.Fatal("topic not visible after a slow prepare")
	}
}

// TestCreateOverOrphanedPendingIsRetriable: a retry of a creation that a
// failover cut short finds the name held by the orphan. It must not hear
// "already exists" (the orphan is about to be aborted, so the topic would
// never appear): it gets a retriable error, the orphan is swept at once,
// and the next retry creates the topic.
func TestCreateOverOrphanedPendingIsRetriable(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	orphan := createTopicCmd{Name: "retried", ID: [16]byte{9}, Assignments: [][]int32{{1}}, Pending: true}
	if _, err := c.propose(ctx, cmdCreateTopic, orphan); err != nil {
		t.Fatal(err)
	}
	req := CreateTopic{Name: "retried", NumPartitions: 1, ReplicationFactor: 1}
	if _, err := c.CreateTopic(ctx, req); !errors.Is(err, ErrTopicCreationUnsettled) {
		t.Fatalf("create over an orphan: %v, want ErrTopicCreationUnsettled", err)
	}
	waitNoTopics(t, c) // swept on request, not at the next tick
	top, err := c.CreateTopic(ctx, req)
	if err != nil {
		t.Fatalf("create after the sweep: %v", err)
	}
	if top.ID == orphan.ID || c.Image().TopicByName("retried") == nil {
		t.Fatalf("created %+v, want a new visible topic", top)
	}
}

// TestCreateDuringAnotherCreationIsRetriable: a create of a name whose
// creation is still preparing (a client's retry after its first request
// timed out, or a second creator) gets a retriable answer, not "already
// exists": that creation may still abort. Once it has activated, the
// answer is "already exists"; had it aborted, the name would be free.
func TestCreateDuringAnotherCreationIsRetriable(t *testing.T) {
	c := newTestController(t, 1)
	ctx := testCtx(t)
	preparing, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.CreateTopic(ctx, CreateTopic{Name: "raced", NumPartitions: 1, ReplicationFactor: 1,
			Prepare: func(context.Context, *Topic) error {
				close(preparing)
				<-release
				return nil
			}})
		done <- err
	}()
	<-preparing
	req := CreateTopic{Name: "raced", NumPartitions: 1, ReplicationFactor: 1}
	if _, err := c.CreateTopic(ctx, req); !errors.Is(err, ErrTopicCreationUnsettled) {
		t.Fatalf("create while another creation prepares: %v, want ErrTopicCreationUnsettled", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the first creation: %v", err)
	}
	if _, err := c.CreateTopic(ctx, req); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("create after the first activated: %v, want ErrTopicExists", err)
	}
}
