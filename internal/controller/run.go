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
	lastRebalance, lastUnclean := s.now(), s.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !s.leader() {
			continue
		}
		s.expireSessions(ctx)
		now := s.now()
		if now.Sub(lastUnclean) >= time.Second {
			lastUnclean = now
			if _, err := s.q.ElectUncleanLeaders(ctx); err != nil && !errors.Is(err, metadata.ErrNotController) && ctx.Err() == nil {
				s.log.Warn("unclean leader elections", "err", err)
			}
		}
		if s.cfg.AutoLeaderRebalance && now.Sub(lastRebalance) >= s.cfg.LeaderImbalanceCheck {
			lastRebalance = now
			s.rebalance(ctx)
		}
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
