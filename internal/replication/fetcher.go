package replication

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/storage"
)

// fetcherKey names a fetcher: the leader it fetches from and, with
// num.replica.fetchers > 1, which of that leader's fetchers.
type fetcherKey struct {
	leader int32
	index  int
}

// fetcher is one goroutine and one client fetching the partitions one
// leader broker leads for this broker: it truncates those that need it
// (one OffsetForLeaderEpoch for all), then fetches those ready (one Fetch
// for all), applies the answers, and loops.
type fetcher struct {
	m      *Manager
	key    fetcherKey
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	parts map[storage.TopicPartition]*partition
	// added counts additions; a fetch built before the latest one is cut
	// short so that the new partition starts now, not after a long poll.
	added uint64
	// inflight cancels the fetch in flight; nil when none.
	inflight context.CancelFunc
	// wake is signalled (without blocking) on additions.
	wake chan struct{}

	// Only the goroutine touches these.
	client LeaderClient
	round  int // rotates the partition order between fetches
}

func newFetcher(m *Manager, key fetcherKey) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &fetcher{
		m: m, key: key, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		log:   m.log.With("leader", key.leader, "fetcher", key.index),
		parts: map[storage.TopicPartition]*partition{},
		wake:  make(chan struct{}, 1),
	}
}

// add hands a partition to the fetcher. A fetch in flight is cancelled so
// that the new partition's truncation and first fetch start at once
// rather than after the leader's long poll (up to replica.fetch.wait.max.ms).
func (f *fetcher) add(p *partition) {
	f.mu.Lock()
	f.parts[p.tp] = p
	f.added++
	if f.inflight != nil {
		f.inflight()
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// remove takes p off the fetcher (if it is still the partition held for
// its topic-partition) and reports how many partitions are left. A fetch
// in flight still names p; its answer for p is dropped (p is retired).
func (f *fetcher) remove(p *partition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[p.tp] == p {
		delete(f.parts, p.tp)
	}
	return len(f.parts)
}

func (f *fetcher) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parts)
}

// snapshot returns the partitions in a fair order (rotated every round, so
// that a full response does not always favour the same ones) and the
// addition count it reflects.
func (f *fetcher) snapshot() ([]*partition, uint64) {
	f.mu.Lock()
	out := make([]*partition, 0, len(f.parts))
	for _, p := range f.parts {
		out = append(out, p)
	}
	gen := f.added
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b *partition) int {
		if c := strings.Compare(a.tp.Topic, b.tp.Topic); c != 0 {
			return c
		}
		return int(a.tp.Partition) - int(b.tp.Partition)
	})
	if n := len(out); n > 1 {
		k := f.round % n
		out = append(out[k:], out[:k]...)
	}
	f.round++
	return out, gen
}

// run is the fetcher goroutine.
func (f *fetcher) run() {
	defer close(f.done)
	defer f.closeClient()
	for f.ctx.Err() == nil {
		parts, gen := f.snapshot()
		now := time.Now()
		var truncating, fetching []*partition
		var next time.Time
		for _, p := range parts {
			st, ok, due := p.ready(now)
			switch {
			case !ok:
				if !due.IsZero() && (next.IsZero() || due.Before(next)) {
					next = due
				}
			case st == Truncating:
				truncating = append(truncating, p)
			case st == Fetching:
				fetching = append(fetching, p)
			}
		}
		fetching, budget, due := f.m.throttleRound(fetching)
		if !due.IsZero() && (next.IsZero() || due.Before(next)) {
			next = due
		}
		if len(truncating) == 0 && len(fetching) == 0 {
			f.sleep(next)
			continue
		}
		if !f.connect(parts) {
			continue
		}
		if len(truncating) > 0 {
			if err := f.truncate(truncating); err != nil {
				f.connectionFailed(parts, err)
			}
			// Truncated partitions fetch in the next round, with the
			// others; a partition walking back through epochs (KIP-279)
			// asks again.
			continue
		}
		if err := f.fetch(fetching, gen, budget, next); err != nil {
			f.connectionFailed(parts, err)
		}
	}
}

// sleep waits until next (zero: until woken), an addition, or the end.
func (f *fetcher) sleep(next time.Time) {
	var timer <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
	case <-f.wake:
	case <-f.ctx.Done():
	}
}

// connect makes sure there is a client, dialing if needed; on failure the
// partitions back off and it reports false.
func (f *fetcher) connect(parts []*partition) bool {
	if f.client != nil {
		return true
	}
	c, err := f.m.dialer.Dial(f.ctx, f.key.leader)
	if err != nil {
		if f.ctx.Err() == nil {
			f.connectionFailed(parts, err)
		}
		return false
	}
	f.client = c
	return true
}

// connectionFailed drops the client (the next round dials again, which
// also picks up a new address) and backs every partition off.
func (f *fetcher) connectionFailed(parts []*partition, err error) {
	if f.ctx.Err() != nil {
		return // stopping: the cancellation is the error
	}
	f.closeClient()
	for _, p := range parts {
		p.delay(f.m.cfg.Backoff, err, false)
	}
}

func (f *fetcher) closeClient() {
	if f.client == nil {
		return
	}
	if err := f.client.Close(); err != nil {
		f.log.Debug("closing leader client", "err", err)
	}
	f.client = nil
}

// stop ends the goroutine and waits for it.
func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}
