package metadata

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestGrownLogStoreSignals: every store wakes the waiters that asked
// before it, and only those; the entries are in the store by then.
func TestGrownLogStoreSignals(t *testing.T) {
	s := newGrownLogStore(raft.NewInmemStore())
	before := s.next()
	select {
	case <-before:
		t.Fatal("signalled before any store")
	default:
	}
	if err := s.StoreLog(&raft.Log{Index: 1, Type: raft.LogBarrier}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-before:
	default:
		t.Fatal("a stored entry did not wake the waiter")
	}
	if last, err := s.LastIndex(); err != nil || last != 1 {
		t.Fatalf("last index %d (%v) when woken, want 1", last, err)
	}
	after := s.next()
	select {
	case <-after:
		t.Fatal("a waiter that asked after the store was woken by it")
	default:
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 2, Type: raft.LogCommand}, {Index: 3, Type: raft.LogBarrier}}); err != nil {
		t.Fatal(err)
	}
	<-after
}
