package metadata

import (
	"sync"

	"github.com/hashicorp/raft"
)

// grownLogStore is Raft's log store telling waiters when entries are
// stored. A broker catching up with the active controller's commit index
// (CaughtUpTo) needs the entries up to it in its own log, and the last
// of them may be a barrier (a heartbeat's VerifyLeader), which changes no
// image: without this signal a waiter that had every command already
// slept until its timeout when only the barrier was still to come.
type grownLogStore struct {
	raft.LogStore

	mu    sync.Mutex
	grown chan struct{} // closed at the next store
}

func newGrownLogStore(s raft.LogStore) *grownLogStore {
	return &grownLogStore{LogStore: s, grown: make(chan struct{})}
}

// StoreLog implements raft.LogStore.
func (s *grownLogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore.
func (s *grownLogStore) StoreLogs(logs []*raft.Log) error {
	err := s.LogStore.StoreLogs(logs)
	s.mu.Lock()
	close(s.grown)
	s.grown = make(chan struct{})
	s.mu.Unlock()
	return err
}

// next returns a channel closed when entries are next stored.
func (s *grownLogStore) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grown
}
