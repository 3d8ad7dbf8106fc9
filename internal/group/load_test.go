package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestReloadRestoresGroupsAndOffsets(t *testing.T) {
	e := newEnv(t, time.Second)
	ids, gen := e.stableGroup("g", "c1", "c2")
	commit(e, CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []CommitOffset{{Topic: "t1", Partition: 2, Offset: 40}}})
	commit(e, CommitRequest{Group: "g", MemberID: ids[0], Generation: gen, Offsets: []CommitOffset{{Topic: "t1", Partition: 2, Offset: 41}}})
	commit(e, CommitRequest{Group: "s", Generation: -1, Offsets: []CommitOffset{{Topic: "t2", Partition: 0, Offset: 7}}})

	e = e.reopen()
	if f := fetchOne(t, e, "g", "t1", 2); f.Offset != 41 {
		t.Fatalf("offset after reload %+v", f)
	}
	if f := fetchOne(t, e, "s", "t2", 0); f.Offset != 7 {
		t.Fatalf("simple offset after reload %+v", f)
	}
	d, err := e.c.DescribeGroup("g")
	if err != nil || d.State != Stable || len(d.Members) != 2 || d.Protocol != "range" {
		t.Fatalf("describe after reload %+v %v", d, err)
	}
	// Members carry on with their generation; their assignment is back.
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen}), nil)
	s := e.syncAsync(SyncRequest{Group: "g", MemberID: ids[1], Generation: gen}).done(t)
	if string(s.Assignment) != string([]byte{1}) {
		t.Fatalf("assignment after reload %v", s.Assignment)
	}
	// A member that never comes back expires.
	for i := 0; i < 4; i++ {
		e.clock.Advance(4 * time.Second)
		_ = e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen})
	}
	wantErr(t, e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ids[0], Generation: gen}), kerr.RebalanceInProgress)
}

func TestLoadingAndNotCoordinator(t *testing.T) {
	clock, log := newFakeClock(), newMemLog()
	log.gate = make(chan struct{})
	c := New(testConfig(clock, log))
	t.Cleanup(c.Close)
	// Find a group on partition 1 and one on partition 0 of 2.
	g0, g1 := "", ""
	for i := 0; g0 == "" || g1 == ""; i++ {
		id := string(rune('a' + i))
		if PartitionFor(id, 2) == 0 {
			g0 = id
		} else {
			g1 = id
		}
	}
	c.Elect(0, 2)
	wantErr(t, c.CheckGroup(g0), kerr.CoordinatorLoadInProgress)
	wantErr(t, c.CheckGroup(g1), kerr.NotCoordinator)
	errs := c.CommitOffsets(context.Background(), CommitRequest{Group: g0, Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 1}}})
	wantErr(t, errs[0], kerr.CoordinatorLoadInProgress)
	if !c.Loading() {
		t.Fatal("not loading")
	}
	close(log.gate)
	deadline := time.Now().Add(10 * time.Second)
	for c.Loading() {
		if time.Now().After(deadline) {
			t.Fatal("never loaded")
		}
		time.Sleep(time.Millisecond)
	}
	wantErr(t, c.CheckGroup(g0), nil)
	wantErr(t, c.CheckGroup(""), kerr.InvalidGroupID)
}

func TestReplaySkipsForeignAndCorruptRecords(t *testing.T) {
	e := newEnv(t, 0)
	commit(e, CommitRequest{Group: "s", Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 3}}})
	e.log.mu.Lock()
	e.log.parts[0] = append(e.log.parts[0],
		Record{Key: []byte{0, 5, 1, 2}, Value: []byte{9}},               // a newer Kafka's record kind
		Record{Key: []byte{0, 1, 0, 1, 's'}, Value: []byte{0, 3, 0, 0}}, // truncated
	)
	e.log.mu.Unlock()
	e = e.reopen()
	if f := fetchOne(t, e, "s", "t1", 0); f.Offset != 3 {
		t.Fatalf("%+v", f)
	}
}

// A partition led again at a new leader epoch is loaded again: between
// the two elections another coordinator may have written to it (here a
// commit appended behind this one's back), and a write still waiting
// from the old epoch is answered NOT_COORDINATOR. The same epoch again
// changes nothing.
func TestElectAtANewEpochReloads(t *testing.T) {
	clock, log := newFakeClock(), newMemLog()
	e := &env{t: t, c: New(testConfig(clock, log)), clock: clock, log: log}
	t.Cleanup(e.c.Close)
	loaded := func() {
		t.Helper()
		waitFor(t, "partition 0 loaded", func() bool { return e.c.Owned()[0] })
	}
	e.c.ElectEpoch(0, 1, 4)
	loaded()
	wantErr(t, commit(e, simpleCommit("g", 0, 5))[0], nil)
	log.hold()
	waiting := e.commitAsync(simpleCommit("g", 1, 6))
	log.waitHeld(t, 1)
	log.mu.Lock()
	log.holding = false
	log.parts[0] = append(log.parts[0], offsetRecord("g", tp{"t1", 0}, Offset{Offset: 9, LeaderEpoch: -1, CommitTime: clock.Now()}))
	log.mu.Unlock()

	e.c.ElectEpoch(0, 1, 4)
	loaded()
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 5 {
		t.Fatalf("same epoch: %+v, want the state kept (5)", f)
	}
	e.c.ElectEpoch(0, 1, 6)
	wantErr(t, answer(t, "commit from the old epoch", waiting)[0], kerr.NotCoordinator)
	loaded()
	if f := fetchOne(t, e, "g", "t1", 0); f.Offset != 9 {
		t.Fatalf("new epoch: %+v, want the log's 9", f)
	}
}
