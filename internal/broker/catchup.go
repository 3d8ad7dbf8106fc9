package broker

// Before a broker tells a client that it does not lead a partition, it
// makes sure it is not merely late. A leadership change is committed by
// the controller and reaches each broker's image a few milliseconds apart,
// so the old leader can answer NOT_LEADER_OR_FOLLOWER naming the new one
// (KIP-951) before the new one knows. Had the new leader answered the same
// at once, the client would back off (franz-go 250 ms, Java and
// librdkafka 100 ms) and refresh its metadata: that was the pause of
// acks at the leader's stop in a rolling restart, about one stop in two.
//
// So a NOT_LEADER_OR_FOLLOWER answer first waits, bounded by
// catchUpMax, until this broker has reconciled every metadata change
// committed when the request arrived: the active controller's commit
// index, asked for with DescribeQuorum (read locally on the controller
// itself). Anything a client can have learned was committed before it
// asked, so a broker that still does not lead after catching up answers
// with the truth, and one that now leads takes the request. Probes are
// coalesced: one is in flight at a time, and a caller joins the next one
// to start, never one that started before it arrived.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/waitclock"
)

// catchUpMax bounds the wait before a NOT_LEADER_OR_FOLLOWER answer: a
// controller's commit reaches its followers within twice raft's commit
// timeout (50 ms), and reconciling a leadership takes milliseconds. If
// the controller cannot be asked, or this broker cannot catch up in time,
// the answer goes out as it stands, as it would have without the wait.
const catchUpMax = 500 * time.Millisecond

// reconciledIndex is the index of the last metadata image the local
// replicas are in line with, and a way to wait for it to grow.
type reconciledIndex struct {
	mu      sync.Mutex
	v       int64
	changed chan struct{}
}

// Load returns the index.
func (r *reconciledIndex) Load() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.v
}

// Advance raises the index to v, if v is higher, and wakes the waiters;
// it reports whether it did.
func (r *reconciledIndex) Advance(v int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v <= r.v {
		return false
	}
	r.v = v
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return true
}

// next returns the index and a channel closed when it next grows.
func (r *reconciledIndex) next() (int64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.v, r.changed
}

// probeCommitIndex is one probe of b.probe, which callers share
// (package coalesce: each gets a probe begun after it asked); bounded by
// catchUpMax, its own, not a caller's: the probe is shared.
func (b *Broker) probeCommitIndex() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), catchUpMax)
	defer cancel()
	return b.askCommitIndex(ctx)
}

// askCommitIndex is the active controller's commit index: its own if this
// node is the controller, else asked with DescribeQuorum.
func (b *Broker) askCommitIndex(ctx context.Context) (uint64, error) {
	if b.meta.IsLeader() {
		return b.meta.CommitIndex(), nil
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = clusterMetadataTopic
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := b.ctrl.Send(ctx, req)
	if err != nil {
		return 0, err
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, fmt.Errorf("describe quorum: %w", err)
	}
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("describe quorum: answer names %d topics", len(r.Topics))
	}
	p := r.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, fmt.Errorf("describe quorum: %w", err)
	}
	return uint64(p.HighWatermark), nil
}

// catchUp waits until this broker's replicas are in line with every
// metadata change committed before the call, or catchUpMax passes; it
// reports whether it caught up. Only answers about to say "not here" call
// it, never the path of a request that succeeds.
func (b *Broker) catchUp(ctx context.Context) bool {
	if !b.ready.Load() {
		// Not serving yet, or stopping: a broker on its way out will
		// lead nothing again, and answers from what it knows.
		return false
	}
	// Waiting for the controller and for the metadata is remote time.
	defer waitclock.Start(ctx)()
	return b.awaitCommitted(ctx)
}

// awaitCommitted is catchUp without its conditions.
func (b *Broker) awaitCommitted(ctx context.Context) bool {
	if b.probe == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, catchUpMax)
	defer cancel()
	commit, err := b.probe.Do(ctx)
	if err != nil {
		b.log.Debug("no commit index to catch up with", slog.Any("err", err))
		return false
	}
	// The image to reconcile: the first one holding the commit. Later
	// ones are not waited for.
	target := int64(-1)
	for {
		imageChanged, logGrown := b.meta.Changes(), b.meta.LogGrown()
		reconciled, reconciledMore := b.reconciled.next()
		if target < 0 && b.meta.CaughtUpTo(commit) {
			target = int64(b.meta.Image().Index())
		}
		if target >= 0 && reconciled >= target {
			return true
		}
		select {
		case <-ctx.Done():
			b.log.Debug("metadata not caught up in time", slog.Uint64("commit", commit),
				slog.Uint64("image", b.meta.Image().Index()), slog.Int64("reconciled", reconciled))
			return false
		case <-imageChanged:
		case <-logGrown: // the entries up to commit may all be here now
		case <-reconciledMore:
		}
	}
}
