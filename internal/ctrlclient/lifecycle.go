package ctrlclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Registration is what a broker tells the controller about itself.
type Registration struct {
	ClusterID   string
	Incarnation [16]byte
	Listeners   []kmsg.BrokerRegistrationRequestListener
	Rack        string
	// PreviousEpoch is the epoch of this broker's last registration, if
	// it shut down cleanly (KIP-966); -1 otherwise.
	PreviousEpoch int64
}

// Status is the broker's standing with the controller, from the last
// heartbeat answer.
type Status struct {
	Epoch          int64 // -1 until registered
	CaughtUp       bool
	Fenced         bool
	ShouldShutDown bool
}

// Lifecycle registers the broker and heartbeats, Kafka's broker
// lifecycle: a registered broker is fenced until it has caught up with the
// metadata log; a broker silent for broker.session.timeout.ms is fenced by
// the controller; a stale epoch (the controller forgot us) re-registers.
type Lifecycle struct {
	c        *Client
	reg      Registration
	interval time.Duration
	// session is broker.session.timeout.ms: how long after a heartbeat
	// the controller may fence a broker it has not heard from since.
	session time.Duration
	// offset is the metadata offset this broker has applied.
	offset func() int64
	log    *slog.Logger

	mu           sync.Mutex
	status       Status
	wantShutdown bool
	// unfencedAt is when the last heartbeat answered "unfenced" was sent
	// (zero: none yet, or fenced since). The controller counts the
	// session from when it received that heartbeat, which is later.
	unfencedAt time.Time
	changed    chan struct{} // closed and replaced on every status change
	poke       chan struct{} // a heartbeat is wanted now
}

// NewLifecycle prepares the lifecycle; Register, then Run.
func NewLifecycle(c *Client, reg Registration, interval, session time.Duration, offset func() int64, logger *slog.Logger) *Lifecycle {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Lifecycle{c: c, reg: reg, interval: interval, session: session, offset: offset, log: logger,
		status: Status{Epoch: -1, Fenced: true}, changed: make(chan struct{}), poke: make(chan struct{}, 1)}
}

// Status returns the latest status.
func (l *Lifecycle) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// InSession reports whether the controller surely still counts this
// broker as alive and unfenced at now: the last heartbeat it answered
// "unfenced" was sent less than the session timeout before now. When it
// is false the controller may have fenced the broker and moved its
// leaderships, and the broker's metadata may not show it yet: a process
// resumed after SIGSTOP, or cut off from every controller, is such a
// broker until a heartbeat gets through.
func (l *Lifecycle) InSession(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.status.Fenced && !l.unfencedAt.IsZero() && now.Sub(l.unfencedAt) < l.session
}

// Epoch is the broker epoch (-1 before registration).
func (l *Lifecycle) Epoch() int64 { return l.Status().Epoch }

// Changed returns a channel closed at the next status change.
func (l *Lifecycle) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// setStatus records the controller's answer to a request sent at sent
// (zero: not a heartbeat), which starts a session if it says unfenced.
func (l *Lifecycle) setStatus(s Status, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.Fenced {
		l.unfencedAt = time.Time{}
	} else if sent.After(l.unfencedAt) {
		l.unfencedAt = sent
	}
	if s == l.status {
		return
	}
	old := l.status
	l.status = s
	close(l.changed)
	l.changed = make(chan struct{})
	if old.Epoch != s.Epoch || old.Fenced != s.Fenced {
		l.log.Info("broker status", "epoch", s.Epoch, "fenced", s.Fenced, "caught_up", s.CaughtUp)
	}
}

// Register registers the broker, retrying until the controller accepts it
// or ctx ends, and returns the broker epoch.
func (l *Lifecycle) Register(ctx context.Context) (int64, error) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID = l.c.cfg.NodeID
	req.ClusterID = l.reg.ClusterID
	req.IncarnationID = l.reg.Incarnation
	req.Listeners = l.reg.Listeners
	if l.reg.Rack != "" {
		req.Rack = kmsg.StringPtr(l.reg.Rack)
	}
	req.PreviousBrokerEpoch = l.reg.PreviousEpoch
	for {
		resp, err := l.c.Send(ctx, req)
		if err != nil {
			return -1, fmt.Errorf("register broker %d: %w", req.BrokerID, err)
		}
		r := resp.(*kmsg.BrokerRegistrationResponse)
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			// DUPLICATE_BROKER_REGISTRATION: this broker's previous
			// process (killed, not stopped) still has a live session;
			// it expires within broker.session.timeout.ms.
			if !kerr.IsRetriable(err) && !errors.Is(err, kerr.RequestTimedOut) && !errors.Is(err, kerr.DuplicateBrokerRegistration) {
				return -1, fmt.Errorf("register broker %d: %w", req.BrokerID, err)
			}
			l.log.Warn("broker registration refused; retrying", "err", err)
			select {
			case <-ctx.Done():
				return -1, fmt.Errorf("register broker %d: %w (last: %v)", req.BrokerID, ctx.Err(), err)
			case <-time.After(l.interval):
			}
			continue
		}
		l.setStatus(Status{Epoch: r.BrokerEpoch, Fenced: true}, time.Time{})
		return r.BrokerEpoch, nil
	}
}

// Run heartbeats every interval until ctx ends, re-registering when the
// controller no longer knows the epoch.
func (l *Lifecycle) Run(ctx context.Context) {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		if err := l.heartbeat(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.poke:
		}
	}
}

// Poke asks Run for a heartbeat now (the broker caught up with the
// metadata and need not wait a whole interval to be unfenced).
func (l *Lifecycle) Poke() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// heartbeat sends one heartbeat and applies the answer.
func (l *Lifecycle) heartbeat(ctx context.Context) error {
	st := l.Status()
	if st.Epoch < 0 {
		_, err := l.Register(ctx)
		return err
	}
	l.mu.Lock()
	want := l.wantShutdown
	l.mu.Unlock()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID = l.c.cfg.NodeID
	req.BrokerEpoch = st.Epoch
	req.CurrentMetadataOffset = l.offset()
	req.WantShutdown = want
	// Bounded by the interval: a late answer is worth less than the next
	// heartbeat, and the session timeout is several intervals long.
	hctx, cancel := context.WithTimeout(ctx, max(l.interval, time.Second))
	defer cancel()
	sent := time.Now()
	resp, err := l.c.Send(hctx, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.BrokerHeartbeatResponse)
	switch err := kerr.ErrorForCode(r.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
		l.log.Warn("controller does not know this broker's epoch; registering again", "epoch", st.Epoch, "err", err)
		_, rerr := l.Register(ctx)
		return rerr
	default:
		return fmt.Errorf("heartbeat: %w", err)
	}
	l.setStatus(Status{Epoch: st.Epoch, CaughtUp: r.IsCaughtUp, Fenced: r.IsFenced, ShouldShutDown: r.ShouldShutdown}, sent)
	return nil
}

// ControlledShutdown asks the controller to move this broker's
// leaderships away (heartbeats with WantShutDown) and waits until it says
// the broker may stop, or ctx ends, or no controller has answered for
// unreachable. That last bound is the broker session timeout: a controller
// that has not heard from this broker for that long fences it and moves
// its leaderships itself, so waiting longer for one that cannot be reached
// moves nothing and only delays the stop. It is what ends the wait of the
// last node of a cluster stopped all at once, whose controllers are gone.
func (l *Lifecycle) ControlledShutdown(ctx context.Context, unreachable time.Duration) error {
	l.mu.Lock()
	l.wantShutdown = true
	l.mu.Unlock()
	lastAnswer := time.Now()
	var lastErr error
	for {
		ch := l.Changed()
		if l.Status().ShouldShutDown {
			return nil
		}
		if err := l.heartbeat(ctx); err != nil && ctx.Err() == nil {
			l.log.Warn("controlled shutdown heartbeat failed", "err", err)
			lastErr = err
		} else if err == nil {
			lastAnswer = time.Now()
		}
		if l.Status().ShouldShutDown {
			return nil
		}
		if silent := time.Since(lastAnswer); unreachable > 0 && silent >= unreachable {
			return fmt.Errorf("controlled shutdown: no controller answered for %v (last: %w)", silent.Round(time.Millisecond), lastErr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlled shutdown: %w", ctx.Err())
		case <-ch:
		case <-time.After(l.interval):
		}
	}
}

// WaitUnfenced waits until the controller has unfenced this broker.
func (l *Lifecycle) WaitUnfenced(ctx context.Context) error {
	for {
		ch := l.Changed()
		if st := l.Status(); st.Epoch >= 0 && !st.Fenced {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait to be unfenced: %w", ctx.Err())
		case <-ch:
		}
	}
}
