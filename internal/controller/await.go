package controller

import (
	"context"
)

// offsetsMoved wakes AwaitApplied's waiters. Called with s.mu held.
func (s *Service) offsetsMoved() {
	close(s.offsets)
	s.offsets = make(chan struct{})
}

// AwaitApplied waits until each broker of ids has reported, in a
// heartbeat, a metadata offset of at least index: brokers report the
// offset up to which they have brought their replicas in line with the
// metadata, so from then on each of them serves what index created (a
// new topic's partitions answer Produce and Fetch at their leaders).
//
// This is what keeps a client that creates a topic and produces to it at
// once from meeting a leader that does not know the topic yet: Kafka
// answers CreateTopics once the change is committed, and a leader still
// behind then answers UNKNOWN_TOPIC_OR_PARTITION, which some clients
// (franz-go) only retry after their metadata's minimum age, 5 s.
//
// A broker that cannot report is not waited for: one fenced, shutting
// down or no longer registered. A silent one is waited for until the
// controller fences it (its session expires), which changes the image.
// AwaitApplied returns when no broker is left to wait for, when this node
// is no longer the active controller, or when ctx ends.
// It has no error: the change it waits on is made either way, and the
// wait only spares the client retries.
func (s *Service) AwaitApplied(ctx context.Context, ids []int32, index int64) {
	for {
		images := s.q.Changes()
		s.mu.Lock()
		offsets := s.offsets
		s.mu.Unlock()
		if !s.leader() || !s.anyBehind(ids, index) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-images: // a broker fenced or gone
		case <-offsets:
		}
	}
}

// anyBehind reports whether some broker of ids that can still report
// has not yet reported index.
func (s *Service) anyBehind(ids []int32, index int64) bool {
	img := s.q.Image()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		b, ok := img.Broker(id)
		if !ok || !b.Eligible() {
			continue
		}
		ss, ok := s.sessions[id]
		if !ok || ss.epoch != b.Epoch {
			continue
		}
		if ss.offset < index {
			return true
		}
	}
	return false
}
