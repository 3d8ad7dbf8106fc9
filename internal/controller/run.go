package controller

import (
	"context"
	"errors"
	"time"

	"github.com/weir-project/weir/internal/metadata"
)

// Run does the active controller's periodic work until ctx ends: it
// fences brokers whose heartbeat session expired, retries unclean
// elections where a topic allows them, and, with auto.leader.rebalance,
// hands leadership back to preferred replicas.
func (s *Service) Run(ctx context.Context) {
	check := min(max(s.cfg.SessionTimeout/8, 50*time.Millisecond), time.Second)
	tick := time.NewTicker(check)
	defer tick.Stop()
	r := rounds{lastRebalance: s.now(), lastUnclean: s.now()}
	end := s.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Measured from the end of the last round, so that a slow round
		// (a proposal waiting for the quorum) is not taken for a stall.
		s.round(ctx, &r, s.now().Sub(end))
		end = s.now()
	}
}

// rounds is what Run keeps between rounds.
type rounds struct {
	lastRebalance, lastUnclean time.Time
}

// round is one round of Run's work, gap after the last one ended.
func (s *Service) round(ctx context.Context, r *rounds, gap time.Duration) {
	if !s.leader() {
		return
	}
	if gap >= s.cfg.SessionTimeout/2 {
		// This process stood still (SIGSTOP, starved): the heartbeats of
		// that time wait unread in its sockets, and its brokers' silence
		// is its own. Fencing them now would move every leadership at
		// once (and a controller resumed from SIGSTOP would propose it
		// before finding out it no longer leads).
		s.log.Warn("the controller stalled; renewing every broker session", "stalled", gap.Round(time.Millisecond))
		s.renewSessions()
		return
	}
	s.expireSessions(ctx)
	now := s.now()
	if now.Sub(r.lastUnclean) >= time.Second {
		r.lastUnclean = now
		if _, err := s.q.ElectUncleanLeaders(ctx); err != nil && !errors.Is(err, metadata.ErrNotController) && ctx.Err() == nil {
			s.log.Warn("unclean leader elections", "err", err)
		}
	}
	if s.cfg.AutoLeaderRebalance && now.Sub(r.lastRebalance) >= s.cfg.LeaderImbalanceCheck {
		r.lastRebalance = now
		s.rebalance(ctx)
	}
}

// renewSessions starts every session again from now.
func (s *Service) renewSessions() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ss := range s.sessions {
		ss.lastBeat = now
		s.sessions[id] = ss
	}
}

// expireSessions fences every unfenced broker silent for the session
// timeout: it leaves the ISRs and its leaderships move.
func (s *Service) expireSessions(ctx context.Context) {
	now := s.now()
	for _, b := range s.q.Image().Brokers() {
		if b.Fenced {
			continue
		}
		s.mu.Lock()
		ss, ok := s.sessions[b.ID]
		if !ok || ss.epoch != b.Epoch {
			// Registered through another controller: start its session.
			ss = session{epoch: b.Epoch, lastBeat: now, offset: -1}
			s.sessions[b.ID] = ss
		}
		s.mu.Unlock()
		if silent := now.Sub(ss.lastBeat); silent >= s.cfg.SessionTimeout {
			s.log.Warn("broker session expired; fencing it", "broker", b.ID, "epoch", b.Epoch, "silent", silent.Round(time.Millisecond))
			if err := s.q.FenceBroker(ctx, b.ID, b.Epoch); err != nil && ctx.Err() == nil {
				s.log.Warn("fence broker", "broker", b.ID, "err", err)
			}
		}
	}
}

// rebalance elects the preferred replica of every partition where it is
// in sync, eligible and not leading (Kafka's auto leader rebalance).
func (s *Service) rebalance(ctx context.Context) {
	res, err := s.q.ElectLeaders(ctx, metadata.ElectPreferred, nil)
	if err != nil {
		if !errors.Is(err, metadata.ErrNotController) && ctx.Err() == nil {
			s.log.Warn("preferred leader election", "err", err)
		}
		return
	}
	moved := 0
	for _, r := range res {
		if r.Err == nil {
			moved++
		}
	}
	if moved > 0 {
		s.log.Info("moved leadership back to preferred replicas", "partitions", moved)
	}
}
