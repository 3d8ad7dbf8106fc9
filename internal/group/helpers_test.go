package group

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeClock runs timers only when the test advances it, in due order, on
// the test's goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, firing every timer that falls due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			c.now = target
			c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool { return t.stopped })
			c.mu.Unlock()
			return
		}
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// memTopics knows topics "t1" (4 partitions) and "t2" (2 partitions).
type memTopics struct{}

func (memTopics) PartitionExists(topic string, p int32) bool {
	n := map[string]int32{"t1": 4, "t2": 2}[topic]
	return p >= 0 && p < n
}

type env struct {
	t     testing.TB
	c     *Coordinator
	clock *fakeClock
	log   *memLog
}

const (
	session   = 10 * time.Second
	rebalance = 30 * time.Second
)

func testConfig(clock *fakeClock, log *memLog) Config {
	return Config{
		Log: log, Topics: memTopics{}, Clock: clock,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 5 * time.Minute,
		OffsetsRetention:       7 * 24 * time.Hour,
		RetentionCheckInterval: 24 * time.Hour * 365, // tests call ExpireOffsets
	}
}

// newEnv is a coordinator owning the single partition of a one-partition
// __consumer_offsets, with no initial rebalance delay unless asked.
func newEnv(t testing.TB, initialDelay time.Duration) *env {
	t.Helper()
	clock, log := newFakeClock(), newMemLog()
	cfg := testConfig(clock, log)
	cfg.InitialRebalanceDelay = initialDelay
	e := &env{t: t, c: New(cfg), clock: clock, log: log}
	t.Cleanup(e.c.Close)
	e.elect(0, 1)
	return e
}

func (e *env) elect(p, n int32) {
	e.t.Helper()
	e.c.Elect(p, n)
	deadline := time.Now().Add(10 * time.Second)
	for !e.c.Owned()[p] {
		if time.Now().After(deadline) {
			e.t.Fatalf("partition %d not loaded", p)
		}
		time.Sleep(time.Millisecond)
	}
}

// reopen is a new coordinator over the same log (a broker restart).
func (e *env) reopen() *env {
	e.t.Helper()
	e.c.Close()
	ne := &env{t: e.t, c: New(testConfig(e.clock, e.log)), clock: e.clock, log: e.log}
	e.t.Cleanup(ne.c.Close)
	ne.elect(0, 1)
	return ne
}

// pendingJoin is a JoinGroup whose answer may come later.
type pendingJoin struct {
	ch chan JoinResult
}

func (e *env) joinAsync(req JoinRequest) *pendingJoin {
	pj := &pendingJoin{ch: make(chan JoinResult, 1)}
	e.c.join(context.Background(), req, func(r JoinResult) { pj.ch <- r })
	return pj
}

// done returns the answer, failing if there is none yet (callbacks run
// synchronously, so "not yet" is deterministic).
func (pj *pendingJoin) done(t testing.TB) JoinResult {
	t.Helper()
	select {
	case r := <-pj.ch:
		return r
	default:
		t.Fatal("JoinGroup not answered")
		return JoinResult{}
	}
}

func (pj *pendingJoin) waiting(t *testing.T) {
	t.Helper()
	select {
	case r := <-pj.ch:
		t.Fatalf("JoinGroup answered early: %+v", r)
	default:
	}
}

type pendingSync struct{ ch chan SyncResult }

func (e *env) syncAsync(req SyncRequest) *pendingSync {
	ps := &pendingSync{ch: make(chan SyncResult, 1)}
	e.c.sync(req, func(r SyncResult) { ps.ch <- r })
	return ps
}

func (ps *pendingSync) done(t testing.TB) SyncResult {
	t.Helper()
	select {
	case r := <-ps.ch:
		return r
	default:
		t.Fatal("SyncGroup not answered")
		return SyncResult{}
	}
}

func (ps *pendingSync) waiting(t *testing.T) {
	t.Helper()
	select {
	case r := <-ps.ch:
		t.Fatalf("SyncGroup answered early: %+v", r)
	default:
	}
}

func joinReq(group, member, client string, protocols ...string) JoinRequest {
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	var ps []Protocol
	for _, p := range protocols {
		ps = append(ps, Protocol{Name: p, Metadata: []byte(client + ":" + p)})
	}
	return JoinRequest{
		Group: group, MemberID: member, ClientID: client, ClientHost: "/127.0.0.1",
		SessionTimeout: session, RebalanceTimeout: rebalance,
		ProtocolType: "consumer", Protocols: ps,
	}
}

func wantErr(t testing.TB, got error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("error %v, want none", got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("error %v, want %v", got, want)
	}
}

func wantKerr(t testing.TB, got *kerr.Error, want *kerr.Error) {
	t.Helper()
	if got != want {
		t.Fatalf("error %v, want %v", got, want)
	}
}

// stableGroup forms a group of the given clients through one rebalance
// (leader = first) and returns member ids and the generation. The env
// must have an initial rebalance delay, so all land in one generation.
func (e *env) stableGroup(group string, clients ...string) ([]string, int32) {
	e.t.Helper()
	var joins []*pendingJoin
	for _, cl := range clients {
		joins = append(joins, e.joinAsync(joinReq(group, "", cl)))
	}
	results := make([]*JoinResult, len(joins))
	for step := 0; step < 60; step++ {
		all := true
		for i, j := range joins {
			if results[i] == nil {
				select {
				case r := <-j.ch:
					results[i] = &r
				default:
					all = false
				}
			}
		}
		if all {
			break
		}
		e.clock.Advance(time.Second)
	}
	var ids []string
	var gen int32
	for i, r := range results {
		if r == nil {
			e.t.Fatalf("join %d not answered", i)
		}
		wantKerr(e.t, r.Err, nil)
		ids = append(ids, r.MemberID)
		gen = r.Generation
	}
	assign := map[string][]byte{}
	for i, id := range ids {
		assign[id] = []byte{byte(i)}
	}
	var syncs []*pendingSync
	for i := len(ids) - 1; i >= 0; i-- { // the leader last: followers wait for it
		req := SyncRequest{Group: group, MemberID: ids[i], Generation: gen}
		if i == 0 {
			req.Assignments = assign
		}
		syncs = append([]*pendingSync{e.syncAsync(req)}, syncs...)
	}
	for i, s := range syncs {
		r := s.done(e.t)
		wantKerr(e.t, r.Err, nil)
		if string(r.Assignment) != string([]byte{byte(i)}) {
			e.t.Fatalf("member %d assignment %v", i, r.Assignment)
		}
	}
	return ids, gen
}
