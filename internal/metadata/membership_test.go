package metadata

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// A broker-only node starts in join mode, is added as a non-voter, and
// then follows the metadata without ever leading.
func TestNonvoterJoinsAndFollows(t *testing.T) {
	leader := openLeader(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	liveBrokers(t, leader, 1)
	if _, err := leader.CreateTopic(ctx, CreateTopic{Name: "before", NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t.TempDir())
	cfg.NodeID = 2
	cfg.Join = true
	bad := cfg
	bad.Voters = map[int32]string{1: leader.RaftAddr()}
	if _, err := Open(bad); err == nil {
		t.Fatal("Open accepted Join with Voters")
	}
	follower, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follower.Close() })
	if err := follower.AddNonvoter(ctx, 3, "127.0.0.1:9"); !errors.Is(err, ErrNotController) {
		t.Fatalf("AddNonvoter on a non-leader: %v", err)
	}
	if err := leader.AddNonvoter(ctx, 2, ""); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("AddNonvoter without an address: %v", err)
	}
	if err := leader.AddNonvoter(ctx, 2, follower.RaftAddr()); err != nil {
		t.Fatalf("AddNonvoter: %v", err)
	}
	if err := follower.WaitLeader(ctx); err != nil {
		t.Fatalf("follower WaitLeader: %v", err)
	}
	if id, _, ok := follower.Leader(); !ok || id != 1 {
		t.Fatalf("follower sees leader %d, %v", id, ok)
	}
	if follower.IsLeader() {
		t.Fatal("the non-voter leads")
	}
	if _, err := follower.CreateTopic(ctx, CreateTopic{Name: "x", NumPartitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrNotController) {
		t.Fatalf("CreateTopic on the non-voter: %v", err)
	}
	// Later changes reach it.
	ch := follower.Changes()
	if _, err := leader.CreateTopic(ctx, CreateTopic{Name: "after", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	for follower.Image().TopicByName("after") == nil {
		select {
		case <-ch:
			ch = follower.Changes()
		case <-ctx.Done():
			t.Fatal("the non-voter never saw the new topic")
		}
	}
	want := stateBytes(t, leader.Image())
	for !bytes.Equal(stateBytes(t, follower.Image()), want) {
		select {
		case <-ch:
			ch = follower.Changes()
		case <-ctx.Done():
			t.Fatalf("states differ:\n%s\n%s", stateBytes(t, follower.Image()), want)
		}
	}
	// Adding it again is harmless; the configuration holds one voter.
	if err := leader.AddNonvoter(ctx, 2, follower.RaftAddr()); err != nil {
		t.Fatal(err)
	}
	f := leader.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters != 1 || len(f.Configuration().Servers) != 2 {
		t.Fatalf("configuration %+v", f.Configuration())
	}
	// Restarted, it catches up (WaitLeader) and follows again, without
	// being added anew.
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.RaftAddr = follower.RaftAddr() // the address the leader knows
	again, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	if err := again.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if again.Image().TopicByName("after") == nil {
		t.Fatal("restarted non-voter lost its state")
	}
	if _, err := leader.CreateTopic(ctx, CreateTopic{Name: "later", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	for ch := again.Changes(); again.Image().TopicByName("later") == nil; ch = again.Changes() {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("the restarted non-voter does not follow")
		}
	}
}

// VerifyLeader vouches for the leadership only with a quorum behind it:
// a leader whose other voter is gone may count itself leader until its
// lease runs out, and must not answer as one meanwhile.
func TestVerifyLeaderNeedsAQuorum(t *testing.T) {
	leader := openLeader(t, testConfig(t.TempDir()))
	ctx := testCtx(t)
	if err := leader.VerifyLeader(ctx); err != nil {
		t.Fatalf("a sole voter: %v", err)
	}
	cfg := testConfig(t.TempDir())
	cfg.NodeID = 2
	cfg.Join = true
	follower, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follower.Close() })
	if err := leader.AddVoter(ctx, 2, follower.RaftAddr()); err != nil {
		t.Fatalf("AddVoter: %v", err)
	}
	if err := follower.WaitLeader(ctx); err != nil {
		t.Fatalf("follower WaitLeader: %v", err)
	}
	if err := leader.VerifyLeader(ctx); err != nil {
		t.Fatalf("with its follower: %v", err)
	}
	if err := follower.VerifyLeader(ctx); !errors.Is(err, ErrNotController) {
		t.Fatalf("VerifyLeader on the follower: %v, want ErrNotController", err)
	}
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	if err := leader.VerifyLeader(ctx); !errors.Is(err, ErrNotController) {
		t.Fatalf("VerifyLeader with the other voter gone: %v, want ErrNotController", err)
	}
}
