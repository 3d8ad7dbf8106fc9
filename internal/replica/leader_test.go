package replica

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage"
)

// fakeClock is a settable clock for lag decisions.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// proposals records ISR changes instead of sending them to a controller;
// the brokers in ineligible may not join an ISR, those in dead are fenced.
type proposals struct {
	got        []ISRChange
	ineligible map[int32]bool
	dead       map[int32]bool
}

func (r *proposals) AlterISR(_ *Partition, c ISRChange) { r.got = append(r.got, c) }
func (r *proposals) MayJoinISR(id int32) bool           { return !r.ineligible[id] }
func (r *proposals) Alive(id int32) bool                { return !r.dead[id] }

func (r *proposals) take(t *testing.T) ISRChange {
	t.Helper()
	if len(r.got) != 1 {
		t.Fatalf("want exactly one ISR proposal, got %v", r.got)
	}
	c := r.got[0]
	r.got = nil
	return c
}

// leaderOf opens broker 1's replica and makes it leader of replicas 1,2,3.
func leaderOf(t *testing.T, isr []int32, minISR int) (*Partition, *fakeClock, *proposals) {
	t.Helper()
	log, err := storage.OpenLog(t.TempDir(), storage.DefaultConfig(), 0, 0, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	p := New(storage.TopicPartition{Topic: "t"}, log, 1)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	p.now = clock.now
	props := &proposals{}
	p.SetISRChanger(props, 10*time.Second)
	if _, err := p.Update(State{LeaderID: 1, LeaderEpoch: 0, PartitionEpoch: 0, Replicas: []int32{1, 2, 3}, ISR: isr, MinISR: minISR}); err != nil {
		t.Fatal(err)
	}
	return p, clock, props
}

func fetch(t *testing.T, p *Partition, id int32, offset int64) Offsets {
	t.Helper()
	_, o, err := p.ReadForFollower(FollowerFetch{ReplicaID: id, CurrentLeaderEpoch: -1, FetchOffset: offset, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatalf("fetch by %d at %d: %v", id, offset, err)
	}
	return o
}

// commit applies a proposal as the controller would: new ISR, partition
// epoch + 1, same leader epoch.
func commit(t *testing.T, p *Partition, c ISRChange) {
	t.Helper()
	s := p.State()
	s.ISR, s.PartitionEpoch = c.ISR, c.PartitionEpoch+1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
}

func TestHighWatermarkIsSmallestISRLogEnd(t *testing.T) {
	p, _, _ := leaderOf(t, []int32{1, 2, 3}, 2)
	if _, err := p.AppendAsLeader(batch(t, 10), 1); err != nil {
		t.Fatal(err)
	}
	if hw := p.Offsets().HighWater; hw != 0 {
		t.Fatalf("hw %d before any follower fetched, want 0", hw)
	}
	fetch(t, p, 2, 10)
	if hw := p.Offsets().HighWater; hw != 0 {
		t.Fatalf("hw %d with follower 3's progress unknown, want 0", hw)
	}
	if o := fetch(t, p, 3, 4); o.HighWater != 4 {
		t.Fatalf("fetch response hw %d, want 4 (the update is visible to the fetcher itself)", o.HighWater)
	}
	fetch(t, p, 3, 10)
	if hw := p.Offsets().HighWater; hw != 10 {
		t.Fatalf("hw %d, want 10", hw)
	}
	// A follower fetching from an older offset (it truncated) does not
	// move the high watermark back.
	fetch(t, p, 2, 3)
	if hw := p.Offsets().HighWater; hw != 10 {
		t.Fatalf("hw went back to %d", hw)
	}
}

func TestFetchByNonReplicaRefused(t *testing.T) {
	p, _, _ := leaderOf(t, []int32{1, 2, 3}, 1)
	_, _, err := p.ReadForFollower(FollowerFetch{ReplicaID: 7, CurrentLeaderEpoch: -1, FetchOffset: 0, MaxBytes: 100})
	if !errors.Is(err, ErrNotReplica) {
		t.Fatalf("fetch by broker 7: %v, want ErrNotReplica", err)
	}
	_, _, err = p.ReadForFollower(FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: 5, FetchOffset: 0, MaxBytes: 100})
	if !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Fatalf("fetch with a future epoch: %v, want ErrUnknownLeaderEpoch", err)
	}
}

func TestLaggingFollowerLeavesISRAndHWMovesAfterCommit(t *testing.T) {
	p, clock, props := leaderOf(t, []int32{1, 2, 3}, 2)
	if _, err := p.AppendAsLeader(batch(t, 5), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 5)
	fetch(t, p, 3, 5)
	if _, err := p.AppendAsLeader(batch(t, 5), 1); err != nil {
		t.Fatal(err)
	}
	// Follower 2 keeps up; follower 3 stops fetching.
	for range 3 {
		clock.advance(4 * time.Second)
		fetch(t, p, 2, p.Offsets().LogEnd)
		p.MaybeShrinkISR()
	}
	c := props.take(t)
	if !slices.Equal(c.ISR, []int32{1, 2}) || c.PartitionEpoch != 0 || c.LeaderEpoch != 0 || c.PreviousISR != 3 {
		t.Fatalf("proposal %+v, want ISR [1 2] replacing 3 replicas at epochs 0/0", c)
	}
	// Until committed, follower 3 still holds the HW at 5.
	if hw := p.Offsets().HighWater; hw != 5 {
		t.Fatalf("hw %d while the shrink is pending, want 5", hw)
	}
	p.MaybeShrinkISR() // nothing new while one is pending
	if len(props.got) != 0 {
		t.Fatalf("second proposal while one is pending: %v", props.got)
	}
	commit(t, p, c)
	if hw := p.Offsets().HighWater; hw != 10 {
		t.Fatalf("hw %d after the shrink committed, want 10", hw)
	}
}

func TestFollowerRejoinsOnceCaughtUpPastEpochStart(t *testing.T) {
	p, _, props := leaderOf(t, []int32{1, 2}, 1)
	if _, err := p.AppendAsLeader(batch(t, 6), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 6)
	fetch(t, p, 3, 2)
	if len(props.got) != 0 {
		t.Fatalf("follower 3 behind the HW was proposed: %v", props.got)
	}
	fetch(t, p, 3, 6)
	c := props.take(t)
	if !slices.Equal(c.ISR, []int32{1, 2, 3}) || c.PreviousISR != 2 {
		t.Fatalf("proposal %v replacing %d, want [1 2 3] replacing 2", c.ISR, c.PreviousISR)
	}
	// While the expansion is pending, follower 3 counts for the HW.
	if _, err := p.AppendAsLeader(batch(t, 2), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 8)
	if hw := p.Offsets().HighWater; hw != 6 {
		t.Fatalf("hw %d, want 6 (follower 3 being added is at 6)", hw)
	}
	p.ISRChangeFailed(c.PartitionEpoch)
	fetch(t, p, 3, 8)
	if c := props.take(t); !slices.Equal(c.ISR, []int32{1, 2, 3}) {
		t.Fatalf("re-proposal %v", c.ISR)
	}
}

// A caught-up follower that may not join (fenced, or in controlled
// shutdown while it still fetches) is not proposed, so the high watermark
// does not wait for it; once it may, it is.
func TestIneligibleFollowerNotProposed(t *testing.T) {
	p, _, props := leaderOf(t, []int32{1, 2}, 1)
	props.ineligible = map[int32]bool{3: true}
	if _, err := p.AppendAsLeader(batch(t, 6), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 6)
	fetch(t, p, 3, 6)
	if len(props.got) != 0 {
		t.Fatalf("ineligible follower 3 was proposed: %v", props.got)
	}
	if _, err := p.AppendAsLeader(batch(t, 2), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 8)
	if hw := p.Offsets().HighWater; hw != 8 {
		t.Fatalf("hw %d, want 8: nothing pending waits for follower 3", hw)
	}
	props.ineligible = nil
	fetch(t, p, 3, 8)
	if c := props.take(t); !slices.Equal(c.ISR, []int32{1, 2, 3}) {
		t.Fatalf("proposal once eligible: %v", c.ISR)
	}
}

func TestRejoinNeedsCurrentEpoch(t *testing.T) {
	// Broker 1 leads epoch 0 with 4 records, then epoch 1 from offset 4.
	p, _, props := leaderOf(t, []int32{1}, 1)
	if _, err := p.AppendAsLeader(batch(t, 4), 1); err != nil {
		t.Fatal(err)
	}
	s := p.State()
	s.LeaderEpoch, s.PartitionEpoch = 1, 1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	// HW is 4; a follower at 4 has not fetched anything of epoch 1 yet,
	// but it holds everything before the epoch start: it may rejoin.
	fetch(t, p, 2, 4)
	if c := props.take(t); !slices.Equal(c.ISR, []int32{1, 2}) {
		t.Fatalf("proposal %v", c.ISR)
	}
}

func TestAckStateAfterISRShrinksBelowMin(t *testing.T) {
	p, _, _ := leaderOf(t, []int32{1, 2}, 2)
	info, err := p.AppendAsLeader(batch(t, 3), -1)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := p.AckState(0, info.LastOffset); done || err != nil {
		t.Fatalf("ack before follower: done %v err %v", done, err)
	}
	s := p.State()
	s.ISR, s.PartitionEpoch = []int32{1}, 1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	if done, err := p.AckState(0, info.LastOffset); !done || !errors.Is(err, ErrNotEnoughAfter) {
		t.Fatalf("ack after shrink: done %v err %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", done, err)
	}
	if _, err := p.AppendAsLeader(batch(t, 1), -1); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=-1 append with ISR 1 < 2: %v", err)
	}
	s.LeaderID, s.LeaderEpoch = 2, 1
	if _, err := p.Update(s); err != nil {
		t.Fatal(err)
	}
	if done, err := p.AckState(0, info.LastOffset); !done || !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ack after losing leadership: %v %v", done, err)
	}
}

func TestWaitersWokenByTheirEvent(t *testing.T) {
	p, _, _ := leaderOf(t, []int32{1, 2}, 1)
	hwW, leoW := NewWaiter(), NewWaiter()
	defer hwW.Done()
	defer leoW.Done()
	hwW.Watch(p, HighWatermark)
	leoW.Watch(p, LogEnd)
	if _, err := p.AppendAsLeader(batch(t, 2), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leoW.C():
	default:
		t.Fatal("append did not wake the log-end waiter")
	}
	select {
	case <-hwW.C():
		t.Fatal("append woke the HW waiter although the HW did not move")
	default:
	}
	fetch(t, p, 2, 2)
	select {
	case <-hwW.C():
	default:
		t.Fatal("HW advance did not wake the HW waiter")
	}
	hwW.Done()
	fetch(t, p, 2, 2)
	if _, err := p.AppendAsLeader(batch(t, 1), 1); err != nil {
		t.Fatal(err)
	}
	fetch(t, p, 2, 3)
	select {
	case <-hwW.C():
		t.Fatal("a waiter that is done was woken")
	default:
	}
}

func TestFollowerAppendFencedByEpoch(t *testing.T) {
	log, err := storage.OpenLog(t.TempDir(), storage.DefaultConfig(), 0, 0, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f := New(storage.TopicPartition{Topic: "t"}, log, 2)
	if _, err := f.Update(State{LeaderID: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	b := batch(t, 2)
	if _, err := f.AppendAsFollower(2, b); !errors.Is(err, ErrNotFollower) {
		t.Fatalf("append from epoch 2 while following epoch 3: %v", err)
	}
	if _, err := f.AppendAsFollower(3, b); err != nil {
		t.Fatal(err)
	}
	if err := f.UpdateFollowerHW(3, 100); err != nil {
		t.Fatal(err)
	}
	if hw := f.Offsets().HighWater; hw != 2 {
		t.Fatalf("follower hw %d, want min(leader 100, leo 2) = 2", hw)
	}
	if err := f.TruncateTo(3, 1); err != nil {
		t.Fatal(err)
	}
	if o := f.Offsets(); o.LogEnd != 0 || o.HighWater != 0 {
		t.Fatalf("after truncating into the batch: %+v, want the whole batch gone", o)
	}
}

// TestLeaderModel drives a leader with random appends, follower fetches,
// clock steps, shrink checks and controller decisions, and checks after
// every step what the high watermark promises: every offset below it is
// on every member of the committed ISR and on at least min.insync.replicas
// brokers, it never decreases, and it never passes a member's log end.
func TestLeaderModel(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		runLeaderModel(t, seed)
	}
}

func runLeaderModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	minISR := 1 + rng.IntN(3)
	p, clock, props := leaderOf(t, []int32{1, 2, 3}, minISR)
	// The model: each follower's log end (what it has really copied).
	copied := map[int32]int64{2: 0, 3: 0}
	alive := map[int32]bool{2: true, 3: true}
	var lastHW int64
	for step := 0; step < 400; step++ {
		switch op := rng.IntN(10); {
		case op < 3:
			_, _ = p.AppendAsLeader(batch(t, 1+rng.IntN(3)), 1)
		case op < 7:
			id := int32(2 + rng.IntN(2))
			if !alive[id] {
				break
			}
			// A follower copies some of what the leader has, then fetches
			// from its new end (a fetch offset is always the follower's
			// real log end).
			leo := p.Offsets().LogEnd
			copied[id] += rng.Int64N(leo - copied[id] + 1)
			fetch(t, p, id, copied[id])
		case op < 8:
			clock.advance(time.Duration(rng.IntN(6)) * time.Second)
			p.MaybeShrinkISR()
		case op < 9:
			id := int32(2 + rng.IntN(2))
			alive[id] = !alive[id]
		default:
			// The controller decides the oldest proposal: commit or refuse.
			if len(props.got) > 0 {
				c := props.got[0]
				props.got = props.got[1:]
				if rng.IntN(4) == 0 {
					p.ISRChangeFailed(c.PartitionEpoch)
				} else {
					commit(t, p, c)
				}
			}
		}
		st, o := p.State(), p.Offsets()
		if o.HighWater < lastHW {
			t.Fatalf("seed %d step %d: hw went back from %d to %d", seed, step, lastHW, o.HighWater)
		}
		lastHW = o.HighWater
		holders := 1 // the leader
		for id, c := range copied {
			if c >= o.HighWater {
				holders++
			} else if slices.Contains(st.ISR, id) && o.HighWater > 0 {
				t.Fatalf("seed %d step %d: ISR %v member %d has %d, below hw %d", seed, step, st.ISR, id, c, o.HighWater)
			}
		}
		if o.HighWater > 0 && holders < minISR {
			t.Fatalf("seed %d step %d: hw %d held by %d brokers, min.insync.replicas %d", seed, step, o.HighWater, holders, minISR)
		}
	}
}

// An acks=-1 append may wait only where another broker is in the ISR the
// high watermark follows, a pending shrink's maximal ISR included.
func TestAcksAllMayWait(t *testing.T) {
	alone, _, _ := leaderOf(t, []int32{1}, 1)
	if alone.AcksAllMayWait() {
		t.Error("a leader alone in its ISR may wait")
	}
	p, clock, props := leaderOf(t, []int32{1, 2}, 1)
	if !p.AcksAllMayWait() {
		t.Error("a leader with a follower in its ISR may not wait")
	}
	// Follower 2 falls behind: the shrink is proposed, and until it is
	// committed the high watermark still follows 2.
	clock.advance(11 * time.Second)
	p.MaybeShrinkISR()
	c := props.take(t)
	if !p.AcksAllMayWait() {
		t.Error("no wait while the shrink is pending")
	}
	commit(t, p, c)
	if p.AcksAllMayWait() {
		t.Error("a wait after the shrink left the leader alone")
	}
	if openPartition(t).AcksAllMayWait() {
		t.Error("a follower may wait")
	}
}
