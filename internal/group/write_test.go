package group

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// These tests hold the commits of the in-memory log (memLog.hold) to see
// what the coordinator does while records replicate: a group's lock is
// not held meanwhile, completions keep the log's order, and a failed or
// abandoned write leaves the state as it was. On the coordinator as it
// was (the lock held across Log.Append) each of them blocks on the
// group's lock and fails on the 10 s limit of answer or waitHeld.

// answer returns what a request running in a goroutine sent on ch,
// failing if it does not come within 10 s (the request is blocked).
func answer[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer within 10 s (blocked)", what)
		var zero T
		return zero
	}
}

// notYet fails if a request already answered.
func notYet[T any](t testing.TB, what string, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s answered early: %+v", what, v)
	default:
	}
}

// async runs f in a goroutine; its result arrives on the channel.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

func (e *env) commitAsync(req CommitRequest) <-chan []error {
	return async(func() []error { return e.c.CommitOffsets(context.Background(), req) })
}

// simpleCommit commits offset o of t1-p from outside group management.
func simpleCommit(group string, p int32, o int64) CommitRequest {
	return CommitRequest{Group: group, Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: p, Offset: o, LeaderEpoch: -1}}}
}

// lostLeadership is how the broker's log reports a batch that can no
// longer commit because another broker leads the partition now.
var lostLeadership = fmt.Errorf("commit to __consumer_offsets-0 at 7: %w (%w)", errors.New("not the leader"), kerr.NotLeaderForPartition)

func TestGroupGoesOnWhileACommitReplicates(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2")
	e.log.hold()
	first := e.commitAsync(CommitRequest{Group: "g", MemberID: ids[0], Generation: gen,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 5, LeaderEpoch: -1}}})
	e.log.waitHeld(t, 1)

	// Heartbeats, syncs, fetches and other commits of the group go on.
	hb := async(func() error { return e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[1], Generation: gen}) })
	wantErr(t, answer(t, "heartbeat", hb), nil)
	sync := async(func() SyncResult {
		return e.c.Sync(context.Background(), SyncRequest{Group: "g", MemberID: ids[1], Generation: gen})
	})
	if r := answer(t, "sync", sync); r.Err != nil || string(r.Assignment) != "\x01" {
		t.Fatalf("sync of a stable group: %+v", r)
	}
	fetched := async(func() FetchedOffset { return fetchOne(t, e, "g", "t1", 0) })
	if f := answer(t, "fetch", fetched); f.Offset != -1 || !f.Pending {
		t.Fatalf("fetch during the commit: %+v, want -1 and pending", f)
	}
	second := e.commitAsync(CommitRequest{Group: "g", MemberID: ids[1], Generation: gen,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 1, Offset: 7, LeaderEpoch: -1}}})
	e.log.waitHeld(t, 2) // two commits of one group in flight at once
	notYet(t, "first commit", first)

	e.log.release(0, nil)
	e.log.release(1, nil)
	wantErr(t, answer(t, "first commit", first)[0], nil)
	wantErr(t, answer(t, "second commit", second)[0], nil)
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 5 || f.Pending {
		t.Fatalf("t1-0 after its commit: %+v", f)
	}
	if f := fetchOne(t, e, "g", "t1", 1); f.Offset != 7 || f.Pending {
		t.Fatalf("t1-1 after its commit: %+v", f)
	}
}

// Two commits of one partition in flight complete in the order they
// were appended, whichever the log reports first, so the group ends
// with the later one unless that one failed.
func TestCommitsOfAPartitionCompleteInLogOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err0, err1 error
		want       int64
	}{
		{"both committed", nil, nil, 6},
		{"earlier failed", lostLeadership, nil, 6},
		{"later failed", nil, lostLeadership, 5},
		{"both failed", lostLeadership, lostLeadership, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 0)
			wantErr(t, commit(e, simpleCommit("g", 0, 1))[0], nil)
			e.log.hold()
			first := e.commitAsync(simpleCommit("g", 0, 5))
			e.log.waitHeld(t, 1)
			second := e.commitAsync(simpleCommit("g", 0, 6))
			e.log.waitHeld(t, 2)

			// The later batch's outcome comes first: it waits for the
			// earlier one before it is applied or answered.
			e.log.release(1, tc.err1)
			e.log.waitReturned(t, 1)
			notYet(t, "later commit", second)
			if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 1 || !f.Pending {
				t.Fatalf("fetch before the earlier commit completed: %+v", f)
			}
			e.log.release(0, tc.err0)
			for i, ch := range []<-chan []error{first, second} {
				want := []error{tc.err0, tc.err1}[i]
				got := answer(t, "commit", ch)[0]
				if want == nil {
					wantErr(t, got, nil)
				} else {
					wantErr(t, got, kerr.NotCoordinator)
				}
			}
			if f := fetchOne(t, e, "g", "t1", 0); f.Offset != tc.want || f.Pending {
				t.Fatalf("fetched %+v, want offset %d", f, tc.want)
			}
		})
	}
}

// A commit that fails after its append (the leadership moved, or it did
// not commit within offsets.commit.timeout.ms) leaves the offsets as they
// were; a group created by such a commit alone is not kept.
func TestFailedCommitLeavesTheState(t *testing.T) {
	clock, log := newFakeClock(), newMemLog()
	cfg := testConfig(clock, log)
	cfg.CommitTimeout = 50 * time.Millisecond
	e := &env{t: t, c: New(cfg), clock: clock, log: log}
	t.Cleanup(e.c.Close)
	e.elect(0, 1)
	wantErr(t, commit(e, simpleCommit("g", 0, 5))[0], nil)
	log.hold()

	lost := e.commitAsync(simpleCommit("g", 0, 6))
	log.waitHeld(t, 1)
	log.release(0, lostLeadership)
	wantErr(t, answer(t, "commit", lost)[0], kerr.NotCoordinator)

	// Never released: the wait ends at the commit timeout.
	wantErr(t, answer(t, "commit", e.commitAsync(simpleCommit("g", 0, 7)))[0], kerr.CoordinatorNotAvailable)
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 5 || f.Pending {
		t.Fatalf("after failed commits: %+v, want 5", f)
	}

	wantErr(t, answer(t, "commit", e.commitAsync(simpleCommit("new", 0, 1)))[0], kerr.CoordinatorNotAvailable)
	if ls := e.c.ListGroups(nil); len(ls) != 1 || ls[0].Group != "g" {
		t.Fatalf("groups after a failed first commit: %+v", ls)
	}
}

// OffsetFetch answers the last committed offset while a commit is in
// flight, and flags the partition as pending (Kafka's GroupMetadata.offset
// and pendingOffsetCommits: UNSTABLE_OFFSET_COMMIT for RequireStable). A
// listing of all partitions names only committed ones.
func TestOffsetFetchDuringAPendingCommit(t *testing.T) {
	e := newEnv(t, 0)
	wantErr(t, commit(e, simpleCommit("g", 0, 5))[0], nil)
	e.log.hold()
	pending := e.commitAsync(CommitRequest{Group: "g", Generation: -1, Offsets: []CommitOffset{
		{Topic: "t1", Partition: 0, Offset: 6, LeaderEpoch: -1}, {Topic: "t1", Partition: 1, Offset: 7, LeaderEpoch: -1},
	}})
	e.log.waitHeld(t, 1)
	got, err := e.c.FetchOffsets("g", []TopicPartitions{{Topic: "t1", Partitions: []int32{0, 1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []FetchedOffset{
		{Topic: "t1", Partition: 0, Offset: 5, LeaderEpoch: -1, Pending: true},
		{Topic: "t1", Partition: 1, Offset: -1, LeaderEpoch: -1, Pending: true},
		{Topic: "t1", Partition: 2, Offset: -1, LeaderEpoch: -1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetch during the commit:\n got %+v\nwant %+v", got, want)
	}
	all, err := e.c.FetchOffsets("g", nil)
	if err != nil || len(all) != 1 || all[0].Offset != 5 || !all[0].Pending {
		t.Fatalf("all partitions during the commit: %+v %v", all, err)
	}
	e.log.release(0, nil)
	wantErr(t, answer(t, "commit", pending)[0], nil)
	all, err = e.c.FetchOffsets("g", nil)
	if err != nil || len(all) != 2 || all[0].Offset != 6 || all[1].Offset != 7 || all[0].Pending || all[1].Pending {
		t.Fatalf("all partitions after the commit: %+v %v", all, err)
	}
}

// Resigning the partition while writes wait answers them NOT_COORDINATOR
// at once (the client looks the coordinator up again), without waiting
// for the commit timeout; so is every request after.
func TestResignWhileWritesWaitAnswersNotCoordinator(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("cg", "a", "t1")
	e.log.hold()
	commitCh := e.commitAsync(simpleCommit("g", 0, 5))
	e.log.waitHeld(t, 1)
	joinCh := async(func() ConsumerHeartbeatResult { _, r := e.join("cg", "b", "t1"); return r })
	e.log.waitHeld(t, 2)

	e.c.Resign(0)
	wantErr(t, answer(t, "commit", commitCh)[0], kerr.NotCoordinator)
	wantCode(t, answer(t, "consumer join", joinCh), kerr.NotCoordinator)
	if _, err := e.c.FetchOffsets("g", nil); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("fetch after resign: %v", err)
	}
	wantCode(t, a.keepalive(), kerr.NotCoordinator)
}

// A classic group stays CompletingRebalance until the leader's
// assignment is committed: heartbeats go on meanwhile, SyncGroups wait,
// and a failed write sends the members back to rejoin.
func TestAssignmentAppliedOnceCommitted(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			e := newEnv(t, time.Second)
			leader, follower := joinTwo(t, e)
			e.log.hold()
			fs := e.syncAsync(SyncRequest{Group: "g", MemberID: follower, Generation: 1})
			ls := e.syncAsync(SyncRequest{Group: "g", MemberID: leader, Generation: 1,
				Assignments: map[string][]byte{leader: []byte("L"), follower: []byte("F")}})
			e.log.waitHeld(t, 1)
			hb := async(func() error { return e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: follower, Generation: 1}) })
			wantErr(t, answer(t, "heartbeat", hb), nil)
			if d, _ := e.c.DescribeGroup("g"); d.State != CompletingRebalance {
				t.Fatalf("state %v while the assignment is written", d.State)
			}
			fs.waiting(t)
			ls.waiting(t)
			if !fail {
				e.log.release(0, nil)
				if r := answer(t, "follower sync", fs.ch); r.Err != nil || string(r.Assignment) != "F" {
					t.Fatalf("follower sync %+v", r)
				}
				if r := answer(t, "leader sync", ls.ch); r.Err != nil || string(r.Assignment) != "L" {
					t.Fatalf("leader sync %+v", r)
				}
				if d, _ := e.c.DescribeGroup("g"); d.State != Stable {
					t.Fatalf("state %v after the assignment committed", d.State)
				}
				return
			}
			e.log.release(0, lostLeadership)
			wantKerr(t, answer(t, "follower sync", fs.ch).Err, kerr.NotCoordinator)
			wantKerr(t, answer(t, "leader sync", ls.ch).Err, kerr.NotCoordinator)
			if d, _ := e.c.DescribeGroup("g"); d.State != PreparingRebalance {
				t.Fatalf("state %v after the assignment failed", d.State)
			}
		})
	}
}

// A consumer group's heartbeats that change nothing, and its commits, go
// on while a member's join is written; the join is applied once
// committed, and a second change waits for the first instead of being
// computed from a state about to change.
func TestConsumerGroupGoesOnWhileAChangeReplicates(t *testing.T) {
	e := newCEnv(t)
	a, _ := e.join("g", "a", "t1")
	settle(t, a)
	epoch := a.epoch
	e.log.hold()
	bCh := async(func() *cmemberSim { m, _ := e.join("g", "b", "t1"); return m })
	e.log.waitHeld(t, 1)

	r := answer(t, "keepalive", async(func() ConsumerHeartbeatResult { return a.keepalive() }))
	ok(t, r)
	if r.MemberEpoch != epoch {
		t.Fatalf("epoch %d while b's join is written, want the committed %d", r.MemberEpoch, epoch)
	}
	if d := e.describe("g"); len(d.Members) != 1 {
		t.Fatalf("b visible before its join committed: %+v", d)
	}
	commitCh := e.commitAsync(CommitRequest{Group: "g", MemberID: "a", Generation: epoch, APIVersion: 9,
		Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 3, LeaderEpoch: -1}}})
	e.log.waitHeld(t, 2)
	cCh := async(func() *cmemberSim { m, _ := e.join("g", "c", "t1"); return m })

	e.log.release(0, nil)
	b := answer(t, "b's join", bCh)
	e.log.release(1, nil)
	wantErr(t, answer(t, "commit", commitCh)[0], nil)
	e.log.waitHeld(t, 3) // c's join, computed after b's
	e.log.release(2, nil)
	c := answer(t, "c's join", cCh)
	if d := e.describe("g"); len(d.Members) != 3 {
		t.Fatalf("members after the joins: %+v", d)
	}
	// From here on every write commits at once.
	e.log.mu.Lock()
	e.log.holding = false
	e.log.mu.Unlock()
	settle(t, a, b, c)
	if n := a.count() + b.count() + c.count(); n != 4 {
		t.Fatalf("%d partitions owned, want t1's 4", n)
	}
}

// A group deletion is a barrier: a commit to the group waits until the
// deletion is committed and then belongs to the group's next life, so
// the state in memory is the one the log replays to.
func TestCommitWaitsForAPendingDeletion(t *testing.T) {
	e := newEnv(t, 0)
	wantErr(t, commit(e, simpleCommit("g", 0, 1))[0], nil)
	e.log.hold()
	del := async(func() error { return e.c.DeleteGroups(context.Background(), []string{"g"})[0] })
	e.log.waitHeld(t, 1)
	after := e.commitAsync(simpleCommit("g", 1, 5))
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 1 {
		t.Fatalf("group gone before its deletion committed: %+v", f)
	}
	e.log.release(0, nil)
	wantErr(t, answer(t, "delete", del), nil)
	e.log.waitHeld(t, 2)
	e.log.release(1, nil)
	wantErr(t, answer(t, "commit", after)[0], nil)
	check := func(e *env) {
		t.Helper()
		all, err := e.c.FetchOffsets("g", nil)
		if err != nil || len(all) != 1 || all[0].Partition != 1 || all[0].Offset != 5 {
			t.Fatalf("offsets after the deletion and the commit: %+v %v", all, err)
		}
	}
	check(e)
	e.log.mu.Lock()
	e.log.holding = false
	e.log.mu.Unlock()
	check(e.reopen())
}

// A static member restarting in a stable group takes its place at once
// (the old member id is fenced) and is answered once the replacement is
// committed, as in Kafka; if the write fails, the old member id is
// restored and the new instance told to retry.
func TestStaticReplacementAnsweredOnceCommitted(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			e := newEnv(t, time.Second)
			req := joinReq("g", "", "c1")
			req.InstanceID = "inst-1"
			first := e.joinAsync(req)
			e.clock.Advance(time.Second)
			r := first.done(t)
			wantKerr(t, r.Err, nil)
			e.syncAsync(SyncRequest{Group: "g", MemberID: r.MemberID, InstanceID: "inst-1", Generation: r.Generation,
				Assignments: map[string][]byte{r.MemberID: []byte("A")}}).done(t)

			e.log.hold()
			restarted := e.joinAsync(req)
			e.log.waitHeld(t, 1)
			restarted.waiting(t)
			beat := func(id string) error {
				return answer(t, "heartbeat", async(func() error {
					return e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: id, InstanceID: "inst-1", Generation: r.Generation})
				}))
			}
			wantErr(t, beat(r.MemberID), kerr.FencedInstanceID)
			if !fail {
				e.log.release(0, nil)
				nr := answer(t, "restarted join", restarted.ch)
				if nr.Err != nil || nr.MemberID == r.MemberID || nr.Generation != r.Generation || !nr.SkipAssignment {
					t.Fatalf("restarted static leader: %+v", nr)
				}
				wantErr(t, beat(nr.MemberID), nil)
				return
			}
			e.log.release(0, lostLeadership)
			wantKerr(t, answer(t, "restarted join", restarted.ch).Err, kerr.NotCoordinator)
			wantErr(t, beat(r.MemberID), nil)
		})
	}
}

// requestKey marks a request's context in TestCommitWaitCarriesTheRequestsValues.
type requestKey struct{}

// TestCommitWaitCarriesTheRequestsValues: the wait for a commit carries
// the committing request's values (the broker's wait clock, which counts
// the wait as the request's remote time) but not its end: a client that
// goes away does not cut the commit short.
func TestCommitWaitCarriesTheRequestsValues(t *testing.T) {
	e := newEnv(t, time.Second)
	e.log.hold()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), requestKey{}, "the request"))
	done := async(func() []error { return e.c.CommitOffsets(ctx, simpleCommit("g", 0, 5)) })
	e.log.waitHeld(t, 1)
	wctx := e.log.heldContext(0)
	if v := wctx.Value(requestKey{}); v != "the request" {
		t.Errorf("the commit wait's context carries %v, not the request's values", v)
	}
	cancel()
	if err := wctx.Err(); err != nil {
		t.Errorf("the request's end ended the commit wait: %v", err)
	}
	e.log.release(0, nil)
	for _, err := range answer(t, "commit", done) {
		wantErr(t, err, nil)
	}
}
