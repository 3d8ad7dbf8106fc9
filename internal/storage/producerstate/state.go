// Package producerstate is one partition's idempotent-producer state: for
// every producer id that wrote to the partition, its epoch and its last
// five batches (sequence range, offsets, timestamp). The leader checks each
// incoming batch against it to drop retried duplicates and refuse gaps and
// fenced epochs; the state follows the log through the
// storage.ProducerStateHook (appends, replication, truncation) and is
// snapshotted to <offset>.snapshot files so a restart replays only the log
// after the latest snapshot.
//
// The rules are Kafka's (ProducerStateManager / ProducerAppendInfo, with
// KIP-360): an older epoch is INVALID_PRODUCER_EPOCH; a newer epoch must
// start at sequence 0; within an epoch the next batch must start right
// after the last one (wrapping from MaxInt32 to 0); a producer the
// partition has no state for (new here, or expired) may start at any
// sequence, which is how a producer continues after its state expired.
package producerstate

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// Errors the broker maps to Kafka error codes.
var (
	ErrOutOfOrderSequence = errors.New("out of order sequence number") // OUT_OF_ORDER_SEQUENCE_NUMBER
	ErrInvalidEpoch       = errors.New("invalid producer epoch")       // INVALID_PRODUCER_EPOCH
)

// RetainedBatches is how many batches per producer are remembered for
// duplicate detection: max.in.flight.requests.per.connection may be at
// most 5 with idempotence.
const RetainedBatches = 5

// batchMeta is one retained batch of a producer.
type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	timestamp               int64
}

// entry is one producer's state.
type entry struct {
	epoch         int16
	batches       []batchMeta // oldest first, at most RetainedBatches
	lastTimestamp int64       // max timestamp of the producer's last batch
}

// add appends a batch, dropping the oldest beyond RetainedBatches.
func (e *entry) add(m batchMeta) {
	if len(e.batches) == RetainedBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:RetainedBatches-1]
	}
	e.batches = append(e.batches, m)
}

// find returns the retained batch with exactly this sequence range.
func (e *entry) find(firstSeq, lastSeq int32) (batchMeta, bool) {
	for _, m := range e.batches {
		if m.firstSeq == firstSeq && m.lastSeq == lastSeq {
			return m, true
		}
	}
	return batchMeta{}, false
}

// lastSeq is the last sequence written in the current epoch, -1 if none.
func (e *entry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// State is one partition's producer state. It implements
// storage.ProducerStateHook; all methods are safe for concurrent use.
type State struct {
	dir    string
	logger *slog.Logger

	mu        sync.Mutex
	producers map[int64]*entry

	fileMu sync.Mutex // serialises snapshot file writes and deletions
	// last is the snapshot file this state last wrote or loaded, under
	// fileMu: a snapshot that would write the same bytes to the same file
	// is skipped, so an idle partition's shutdown writes nothing.
	last lastSnapshot
}

// lastSnapshot is a snapshot file known to hold data; synced says it was
// fsynced by this process (a loaded file may still be only in the page
// cache, after a kill of the last one).
type lastSnapshot struct {
	path   string
	data   []byte
	synced bool
}

var _ storage.ProducerStateHook = (*State)(nil)

// Duplicate describes the stored batch that an incoming batch repeats.
type Duplicate struct {
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64
}

// BatchFromHeader is what Check and OnBatch need of a batch header.
func BatchFromHeader(h recordbatch.Header) storage.BatchInfo {
	last := int32(-1)
	if h.BaseSequence >= 0 {
		last = incrementSeq(h.BaseSequence, h.LastOffsetDelta)
	}
	return storage.BatchInfo{
		FirstOffset:   h.BaseOffset,
		LastOffset:    h.LastOffset(),
		ProducerID:    h.ProducerID,
		ProducerEpoch: h.ProducerEpoch,
		BaseSequence:  h.BaseSequence,
		LastSequence:  last,
		MaxTimestamp:  h.MaxTimestamp,
		Transactional: h.Transactional(),
		Control:       h.Control(),
	}
}

// Check validates the batches of one produce request, in order, against
// the state (offsets in the batches are ignored). It returns a Duplicate
// when the request repeats a retained batch: the caller then appends
// nothing and answers with the original offsets. Errors wrap
// ErrOutOfOrderSequence or ErrInvalidEpoch, or recordbatch.ErrInvalidRecord
// for a duplicate sent together with other batches.
func (s *State) Check(batches []storage.BatchInfo) (Duplicate, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// pending holds producers as the earlier batches of this request leave
	// them, so a request with several batches is checked as a chain.
	var stack [4]pendingEntry
	pending := stack[:0]
	for i, b := range batches {
		if b.ProducerID < 0 || b.Control {
			continue
		}
		cur, known := s.view(pending, b.ProducerID)
		if known && b.ProducerEpoch == cur.epoch {
			if e := s.producers[b.ProducerID]; e != nil && e.epoch == b.ProducerEpoch {
				if m, ok := e.find(b.BaseSequence, b.LastSequence); ok {
					if len(batches) > 1 {
						return Duplicate{}, false, fmt.Errorf("%w: batch %d of %d repeats producer %d sequences %d..%d; a retried batch must be sent alone",
							recordbatch.ErrInvalidRecord, i, len(batches), b.ProducerID, b.BaseSequence, b.LastSequence)
					}
					return Duplicate{FirstOffset: m.firstOffset, LastOffset: m.lastOffset, Timestamp: m.timestamp}, true, nil
				}
			}
		}
		if err := checkSequence(b, cur, known); err != nil {
			return Duplicate{}, false, err
		}
		pending = append(pending, pendingEntry{id: b.ProducerID, epoch: b.ProducerEpoch, lastSeq: b.LastSequence})
	}
	return Duplicate{}, false, nil
}

// pendingEntry is what Check needs of a producer: its epoch and last
// sequence (-1 when no batch of the epoch is known).
type pendingEntry struct {
	id      int64
	epoch   int16
	lastSeq int32
}

// view is a producer as of the batches checked so far: the latest pending
// entry for it, else its stored state.
func (s *State) view(pending []pendingEntry, id int64) (pendingEntry, bool) {
	for i := len(pending) - 1; i >= 0; i-- {
		if pending[i].id == id {
			return pending[i], true
		}
	}
	e := s.producers[id]
	if e == nil {
		return pendingEntry{}, false
	}
	return pendingEntry{id: id, epoch: e.epoch, lastSeq: e.lastSeq()}, true
}

// checkSequence applies Kafka's epoch and sequence rules to one batch.
func checkSequence(b storage.BatchInfo, cur pendingEntry, known bool) error {
	switch {
	case !known:
		// KIP-360: no state for this producer (never seen here, expired,
		// or its records deleted): accept any sequence.
		return nil
	case b.ProducerEpoch < cur.epoch:
		return fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d",
			ErrInvalidEpoch, b.ProducerID, b.ProducerEpoch, cur.epoch)
	case b.ProducerEpoch > cur.epoch:
		if b.BaseSequence != 0 {
			return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, not %d",
				ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.BaseSequence)
		}
		return nil
	case !inSequence(cur.lastSeq, b.BaseSequence):
		return fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d",
			ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.BaseSequence, incrementSeq(cur.lastSeq, 1))
	}
	return nil
}

// inSequence reports whether next directly follows last, Kafka's way:
// after MaxInt32 comes 0, and after "none" (-1) comes 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// incrementSeq adds n to a sequence, wrapping past MaxInt32 to 0.
func incrementSeq(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// decrementSeq subtracts n from a sequence, wrapping below 0 to MaxInt32.
func decrementSeq(seq, n int32) int32 {
	if seq < n {
		return math.MaxInt32 - (n - seq) + 1
	}
	return seq - n
}

// OnBatch records a batch that reached the log (leader append, follower
// append or replay). Epoch and sequence were checked on the leader; here
// the state simply follows the log, as Kafka's replication path does.
func (s *State) OnBatch(b storage.BatchInfo) {
	if b.ProducerID < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.producers[b.ProducerID]
	if e == nil {
		e = &entry{epoch: b.ProducerEpoch}
		s.producers[b.ProducerID] = e
	}
	if b.ProducerEpoch != e.epoch {
		e.epoch, e.batches = b.ProducerEpoch, e.batches[:0]
	}
	e.lastTimestamp = b.MaxTimestamp
	if b.Control || b.BaseSequence < 0 {
		return // a transaction marker moves the epoch but is no data batch
	}
	e.add(batchMeta{
		firstSeq:    b.BaseSequence,
		lastSeq:     b.LastSequence,
		firstOffset: b.FirstOffset,
		lastOffset:  b.LastOffset,
		timestamp:   b.MaxTimestamp,
	})
}

// RemoveExpired drops producers whose last batch's timestamp is ttl or
// more before now (producer.id.expiration.ms) and returns how many. Like
// Kafka it goes by the batches' timestamps, so leader and followers
// expire the same producers.
func (s *State) RemoveExpired(now time.Time, ttl time.Duration) int {
	cutoff := now.UnixMilli() - ttl.Milliseconds()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, e := range s.producers {
		if e.lastTimestamp <= cutoff {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// Len is the number of producers with state.
func (s *State) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.producers)
}

// Producer is a read-only view of one producer's state, for tests and
// diagnostics.
type Producer struct {
	Epoch         int16
	LastSequence  int32 // -1 if no batch of the epoch is retained
	LastOffset    int64 // -1 likewise
	LastTimestamp int64
	Batches       int
}

// Producer returns the state of one producer id.
func (s *State) Producer(id int64) (Producer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.producers[id]
	if e == nil {
		return Producer{}, false
	}
	p := Producer{Epoch: e.epoch, LastSequence: e.lastSeq(), LastOffset: -1, LastTimestamp: e.lastTimestamp, Batches: len(e.batches)}
	if n := len(e.batches); n > 0 {
		p.LastOffset = e.batches[n-1].lastOffset
	}
	return p, true
}
