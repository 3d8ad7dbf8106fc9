package ctrlclient

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/server"
)

// fakeController answers controller requests the way a controller (or a
// voter that is not the active one) would.
type fakeController struct {
	active atomic.Bool
	mu     sync.Mutex
	epoch  int64
	regs   int
	beats  []*kmsg.BrokerHeartbeatRequest
	forget atomic.Bool // answer the next heartbeat STALE_BROKER_EPOCH
}

func (f *fakeController) Handle(_ context.Context, _ *server.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		if !f.active.Load() {
			resp.ErrorCode = kerr.NotController.Code
			return resp, nil
		}
		f.regs++
		f.epoch += 10
		resp.BrokerEpoch = f.epoch
		return resp, nil
	case *kmsg.BrokerHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		switch {
		case !f.active.Load():
			resp.ErrorCode = kerr.NotController.Code
		case f.forget.Swap(false) || r.BrokerEpoch != f.epoch:
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		default:
			f.beats = append(f.beats, r)
			resp.IsCaughtUp = r.CurrentMetadataOffset >= 5
			resp.IsFenced = !resp.IsCaughtUp
			resp.ShouldShutdown = r.WantShutdown
		}
		return resp, nil
	}
	return nil, nil
}

func startFake(t *testing.T, active bool) (*fakeController, string) {
	t.Helper()
	f := &fakeController{}
	f.active.Store(active)
	srv, err := server.New(server.Config{
		Listeners: []server.Listener{{Name: "CONTROLLER", Addr: "127.0.0.1:0"}},
		APIs: map[int16][2]int16{
			kmsg.BrokerRegistration.Int16(): {0, 4},
			kmsg.BrokerHeartbeat.Int16():    {0, 1},
		},
	}, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f, srv.Addr("CONTROLLER").(*net.TCPAddr).String()
}

func TestSendFindsTheActiveController(t *testing.T) {
	_, standby := startFake(t, false)
	active, addr := startFake(t, true)
	c := New(Config{NodeID: 7, Voters: map[int32]string{1: standby, 2: addr}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc := NewLifecycle(c, Registration{ClusterID: "c"}, 20*time.Millisecond, time.Minute, func() int64 { return 5 }, nil)
	epoch, err := lc.Register(ctx)
	if err != nil || epoch != 10 {
		t.Fatalf("register: epoch %d err %v", epoch, err)
	}
	if active.regs != 1 {
		t.Fatalf("active controller saw %d registrations", active.regs)
	}
}

func TestLifecycleHeartbeatsAndReregisters(t *testing.T) {
	f, addr := startFake(t, true)
	c := New(Config{NodeID: 7, Voters: map[int32]string{1: addr}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var offset atomic.Int64
	lc := NewLifecycle(c, Registration{ClusterID: "c"}, 20*time.Millisecond, time.Minute, offset.Load, nil)
	if _, err := lc.Register(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { lc.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()

	// Fenced until caught up with the metadata log.
	if lc.InSession(time.Now()) {
		t.Fatal("in session before any heartbeat answered unfenced")
	}
	offset.Store(5)
	if err := lc.WaitUnfenced(ctx); err != nil {
		t.Fatal(err)
	}
	// The session runs from the send of the last unfenced answer's
	// heartbeat: a minute later (a process resumed after SIGSTOP) it has
	// lapsed unless another heartbeat got through.
	if now := time.Now(); !lc.InSession(now) || lc.InSession(now.Add(time.Minute)) {
		t.Fatalf("in session now: %v, a minute later: %v; want true, false", lc.InSession(now), lc.InSession(now.Add(time.Minute)))
	}
	// The controller forgets the epoch: the broker registers again and
	// carries on with the new one.
	f.forget.Store(true)
	for {
		ch := lc.Changed()
		if lc.Epoch() == 20 && !lc.Status().Fenced {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no re-registration: status %+v", lc.Status())
		}
	}
	if err := lc.ControlledShutdown(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if last := f.beats[len(f.beats)-1]; !last.WantShutdown || last.BrokerID != 7 {
		t.Fatalf("last heartbeat %+v, want WantShutdown from broker 7", last)
	}
}

// TestControlledShutdownWithoutController: with no active controller (the
// rest of a cluster stopped first) the controlled shutdown gives up once
// none has answered for the given bound, not at the caller's deadline.
func TestControlledShutdownWithoutController(t *testing.T) {
	f, addr := startFake(t, true)
	c := New(Config{NodeID: 7, Voters: map[int32]string{1: addr}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc := NewLifecycle(c, Registration{ClusterID: "c"}, 20*time.Millisecond, time.Minute, func() int64 { return 5 }, nil)
	if _, err := lc.Register(ctx); err != nil {
		t.Fatal(err)
	}
	f.active.Store(false)
	err := lc.ControlledShutdown(ctx, 100*time.Millisecond)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "no controller answered") {
		t.Fatalf("controlled shutdown: %v (ctx %v), want it to give up without a controller", err, ctx.Err())
	}
}

// TestSendFindsVoterOutsideConfig: a controller that became a voter after
// start (so is missing from Config.Voters) is found through
// CurrentVoters, and a voter list that shrank still falls back on the
// configured ones.
func TestSendFindsVoterOutsideConfig(t *testing.T) {
	_, standby := startFake(t, false)
	_, active := startFake(t, true)
	c := New(Config{NodeID: 7, Voters: map[int32]string{1: standby},
		CurrentVoters: func() map[int32]string { return map[int32]string{1: standby, 5: active} }})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Send(ctx, kmsg.NewPtrBrokerRegistrationRequest())
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.BrokerRegistrationResponse); r.ErrorCode != 0 {
		t.Fatalf("answer %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if ids, _ := c.candidates(); len(ids) != 2 || ids[0] != 5 {
		t.Fatalf("candidates %v: the one that answered should come first", ids)
	}
}
