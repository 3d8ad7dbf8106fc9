package replica

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage"
)

// TestHandOverAfterStorageError: a leader whose log refuses writes with a
// storage error (here: after a failed fsync of a rolled segment, which
// fails every later append until restart) proposes the ISR without
// itself, once, so that the controller elects another member.
func TestHandOverAfterStorageError(t *testing.T) {
	cfg := storage.DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.FileDeleteDelayMs = 0
	mc := storage.ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: cfg,
		BeforeRollFlush: func(string, int64) error { return errors.New("fsync: input/output error (injected)") }}
	m, err := storage.OpenManager(mc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	log, err := m.GetOrCreate(storage.TopicPartition{Topic: "t"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := New(storage.TopicPartition{Topic: "t"}, log, 1)
	props := &proposals{}
	p.SetISRChanger(props, 10*time.Second)
	if _, err := p.Update(State{LeaderID: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	// Append until the failed flush of the first rolled segment shows.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := p.AppendAsLeader(batch(t, 50), 1)
		if errors.Is(err, storage.ErrStorage) {
			if !errors.Is(err, ErrHandingOver) {
				t.Fatalf("the failed append does not say the leader hands over: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no storage error after 30 s of appends past a failed flush")
		}
	}
	c := props.take(t)
	if !slices.Equal(c.ISR, []int32{2, 3}) || c.PreviousISR != 3 {
		t.Fatalf("proposal %+v, want ISR [2 3] from 3 members", c)
	}
	// While the proposal is in flight, more failures propose nothing,
	// and the high watermark still counts this broker.
	if _, err := p.AppendAsLeader(batch(t, 1), 1); !errors.Is(err, storage.ErrStorage) || !errors.Is(err, ErrHandingOver) {
		t.Fatalf("second append: %v", err)
	}
	if !p.Leads(0) {
		t.Fatal("no longer leads before the controller decided")
	}
	if len(props.got) != 0 {
		t.Fatalf("proposed again while one is in flight: %v", props.got)
	}
	// The controller elects broker 2: this replica follows.
	s := p.State()
	s.LeaderID, s.LeaderEpoch, s.PartitionEpoch, s.ISR = 2, s.LeaderEpoch+1, c.PartitionEpoch+1, c.ISR
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(t, 1), 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append after the hand-over: %v, want ErrNotLeader", err)
	}
	if p.Leads(0) || p.Leads(1) {
		t.Fatal("still leads after the hand-over")
	}
}

// TestHandOverNeedsAnotherLeader: nothing is proposed when this broker is
// the only ISR member or every other one may not lead (fenced, shutting
// down), or while another ISR change is in flight; a refused proposal
// clears the way for the next failure's.
func TestHandOverNeedsAnotherLeader(t *testing.T) {
	handOver := func(p *Partition) []int32 {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.handOverLocked()
	}
	p, _, props := leaderOf(t, []int32{1}, 1)
	if to := handOver(p); to != nil || len(props.got) != 0 {
		t.Fatalf("alone in the ISR: proposed %v", props.got)
	}

	p, _, props = leaderOf(t, []int32{1, 2, 3}, 2)
	props.ineligible = map[int32]bool{2: true, 3: true}
	if to := handOver(p); to != nil || len(props.got) != 0 {
		t.Fatalf("no eligible member: proposed %v", props.got)
	}
	props.ineligible = map[int32]bool{2: true}
	if to := handOver(p); !slices.Equal(to, []int32{2, 3}) {
		t.Fatalf("one eligible member: proposed %v", to)
	}
	c := props.take(t)
	if to := handOver(p); to != nil {
		t.Fatalf("proposed %v while a change is in flight", to)
	}
	p.ISRChangeFailed(c.PartitionEpoch)
	if to := handOver(p); !slices.Equal(to, []int32{2, 3}) {
		t.Fatalf("after a refusal: proposed %v", to)
	}
}

// TestFollowerThatCannotWrite: a follower fetch that says its log cannot
// take writes takes the follower out of the ISR at once, and never brings
// it back in, however caught up its fetch offset looks.
func TestFollowerThatCannotWrite(t *testing.T) {
	p, _, props := leaderOf(t, []int32{1, 2, 3}, 2)
	if _, err := p.AppendAsLeader(batch(t, 3), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 3)
	fetch(t, p, 3, 3)
	if hw := p.Offsets().HighWater; hw != 3 {
		t.Fatalf("high watermark %d, want 3", hw)
	}
	cannot := func(id int32, offset int64) {
		t.Helper()
		if _, _, err := p.ReadForFollower(FollowerFetch{ReplicaID: id, CurrentLeaderEpoch: -1, FetchOffset: offset, CannotWrite: true}); err != nil {
			t.Fatal(err)
		}
	}
	cannot(2, 3)
	c := props.take(t)
	if !slices.Equal(c.ISR, []int32{1, 3}) {
		t.Fatalf("proposal %v, want [1 3]", c.ISR)
	}
	commit(t, p, c)
	// Caught up as far as its offset tells, it still stays out.
	cannot(2, 3)
	if len(props.got) != 0 {
		t.Fatalf("proposed %v for a follower that cannot write", props.got)
	}
	// Once it can write again, its fetches bring it back.
	fetch(t, p, 2, 3)
	if c := props.take(t); !slices.Equal(c.ISR, []int32{1, 2, 3}) {
		t.Fatalf("proposal %v after it can write, want [1 2 3]", c.ISR)
	}
}
