package metadata

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// fsm is the Raft state machine. Raft calls Apply, Snapshot and Restore
// from one goroutine; readers load the current image from an atomic pointer
// and learn of changes from a channel closed on every publish.
type fsm struct {
	image atomic.Pointer[Image]

	mu      sync.Mutex // orders publishes with Changes() callers
	changed chan struct{}
}

func newFSM() *fsm {
	f := &fsm{changed: make(chan struct{})}
	f.image.Store(emptyImage())
	return f
}

func (f *fsm) current() *Image { return f.image.Load() }

// publish makes im current and wakes everyone waiting on the old channel.
// Storing under mu means a reader that took the channel and then loaded the
// image is always woken for any later image.
func (f *fsm) publish(im *Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.image.Store(im)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fsm) changes() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Apply implements raft.FSM. Its result is an applyResult.
func (f *fsm) Apply(l *raft.Log) interface{} {
	next, res := applyCommand(f.current(), l.Index, l.Data)
	// A rejected command changes nothing but the index, and readers are
	// woken for it all the same: brokers report the index they have
	// caught up to (heartbeats), and one waiting to report an index must
	// not sleep through it.
	f.publish(next)
	return res
}

// Snapshot implements raft.FSM. Images are immutable, so the snapshot just
// keeps a reference and serialises it later on raft's snapshot goroutine.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{image: f.current()}, nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	im, err := decodeSnapshot(rc)
	if err != nil {
		return err
	}
	f.publish(im)
	return nil
}

type fsmSnapshot struct{ image *Image }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := encodeSnapshot(sink, s.image); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("close metadata snapshot %s: %w", sink.ID(), err)
	}
	return nil
}

func (s *fsmSnapshot) Release() {}
