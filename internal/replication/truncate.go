package replication

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
)

// truncation is what one leader answer means for the local log.
type truncation struct {
	// offset is where the log is cut (nothing is cut if >= its end).
	offset int64
	// done: the log now agrees with the leader's; fetching starts. If not,
	// the leader is asked again about nextAsk (KIP-279's walk back).
	done    bool
	nextAsk int32
}

// decideTruncation applies Kafka's rule (AbstractFetcherThread's
// getOffsetTruncationState) to the leader's answer (leaderEpoch,
// leaderEnd) for the epoch asked. ours looks epochs up in the local leader
// epoch cache (replica.EndOffsetForEpoch); logEnd and logStart are the
// local log's.
//
//   - The leader knows an epoch the follower also has: cut at the smaller
//     of the two ends of that epoch (KIP-101). Done.
//   - The leader answers an epoch the follower lacks: the follower has the
//     largest epoch below it, ending at ours; cut there and ask about that
//     epoch next (KIP-279), so that divergence at several epochs is found.
//   - The follower has no epoch at or below the leader's answer: cut at
//     the leader's end offset. Done.
//   - The leader answers an end offset but no epoch (a pre-2.0 protocol):
//     cut at its end offset. Done.
//   - The leader answers no end offset (UNDEFINED_EPOCH_OFFSET): it has no
//     epoch at or below the one asked, so none of the follower's records
//     of that epoch or later can be on the leader. Kafka falls back to the
//     high watermark here, a blind cut that both keeps records the leader
//     lacks and drops some it has; we cut at the start of the asked epoch
//     instead and walk back to the epoch before it, which only removes
//     records the leader cannot hold. (A leader always records its own
//     epoch when it takes over, so between weir brokers this answer means
//     the follower's history is newer than the leader's: it does not arise
//     with metadata that moves forward.)
//
// Each step that is not done asks about a strictly older epoch, so the
// walk ends.
func decideTruncation(asked, leaderEpoch int32, leaderEnd, logEnd, logStart int64, ours func(int32) (int32, int64)) truncation {
	if leaderEnd < 0 {
		prev, start := int32(-1), int64(-1)
		if asked > 0 {
			prev, start = ours(asked - 1)
		}
		if start < 0 {
			prev, start = -1, logStart
		}
		t := truncation{offset: min(start, logEnd), nextAsk: prev}
		t.done = prev < 0 || prev >= asked
		return t
	}
	if leaderEpoch < 0 {
		return truncation{offset: min(leaderEnd, logEnd), done: true}
	}
	found, end := ours(leaderEpoch)
	switch {
	case end < 0:
		return truncation{offset: min(leaderEnd, logEnd), done: true}
	case found != leaderEpoch:
		t := truncation{offset: min(end, logEnd), nextAsk: found}
		// A leader answering an epoch above the one asked breaks the
		// protocol; stop walking rather than loop.
		t.done = found >= asked
		return t
	default:
		return truncation{offset: min(end, leaderEnd, logEnd), done: true}
	}
}

// epochQuery is one partition's question in an OffsetForLeaderEpoch.
type epochQuery struct {
	p     *partition
	epoch int32
}

// truncate runs one round of truncation for the given partitions: one
// OffsetForLeaderEpoch to the leader for all, then each log is cut where
// the answer says. The error is a connection failure (no answer).
func (f *fetcher) truncate(parts []*partition) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.m.cfg.LocalID // v3+: answer as to a follower
	topics := map[string]int{}
	var queries []epochQuery
	var drops []*partition
	for _, p := range parts {
		fs, ok, drop := f.followerState(p)
		if drop {
			drops = append(drops, p)
		}
		if !ok {
			continue
		}
		ask := fs.LatestEpoch
		if a := p.nextAsk(); a >= 0 && a < ask {
			ask = a
		}
		if ask < 0 {
			if f.truncateWithoutEpochs(p) {
				drops = append(drops, p)
			}
			continue
		}
		i, seen := topics[p.tp.Topic]
		if !seen {
			i = len(req.Topics)
			topics[p.tp.Topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = p.tp.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.CurrentLeaderEpoch = p.epoch
		rp.LeaderEpoch = ask
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		queries = append(queries, epochQuery{p: p, epoch: ask})
	}
	defer func() { f.m.detachAll(drops) }()
	if len(queries) == 0 {
		return nil
	}
	resp, err := f.client.OffsetForLeaderEpoch(f.ctx, req)
	if err != nil {
		return err
	}
	type key struct {
		topic string
		part  int32
	}
	answers := map[key]*kmsg.OffsetForLeaderEpochResponseTopicPartition{}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			answers[key{rt.Topic, rt.Partitions[pi].Partition}] = &rt.Partitions[pi]
		}
	}
	for _, q := range queries {
		a := answers[key{q.p.tp.Topic, q.p.tp.Partition}]
		if a == nil {
			q.p.delay(f.m.cfg.Backoff, fmt.Errorf("leader did not answer OffsetForLeaderEpoch for epoch %d", q.epoch), true)
			continue
		}
		if f.applyEpochAnswer(q, a) {
			drops = append(drops, q.p)
		}
	}
	return nil
}

// applyEpochAnswer cuts the log where the leader's answer says; it
// reports whether the partition is to be dropped (the replica moved on).
func (f *fetcher) applyEpochAnswer(q epochQuery, a *kmsg.OffsetForLeaderEpochResponseTopicPartition) (drop bool) {
	p := q.p
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.gone {
		return false
	}
	if a.ErrorCode != 0 {
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH (our metadata is
		// behind), UNKNOWN_LEADER_EPOCH (the leader's is), storage or
		// unknown-topic errors: all are retried after the backoff, by
		// which time Follow may have moved the partition on.
		p.delayAfter(f.m.cfg.Backoff, a.ErrorCode, fmt.Errorf("offset for leader epoch %d: %w", q.epoch, kerr.ErrorForCode(a.ErrorCode)), true)
		return false
	}
	fs, ok, drop := f.followerStateLocked(p)
	if !ok {
		return drop
	}
	t := decideTruncation(q.epoch, a.LeaderEpoch, a.EndOffset, fs.LogEnd, fs.LogStart, p.r.EndOffsetForEpoch)
	// Truncated even when nothing is cut (offset == log end): the log also
	// drops epoch entries at its end that no record backs (an epoch this
	// replica led without appending), which would otherwise corrupt the
	// epoch history once the leader's older-epoch records land there.
	if err := p.r.TruncateTo(p.epoch, t.offset); err != nil {
		return f.replicaFailed(p, fmt.Errorf("truncate to %d: %w", t.offset, err), true)
	}
	// A cut inside a batch takes the whole batch: read the real end.
	end := p.r.Offsets().LogEnd
	if end < fs.LogEnd {
		p.log.Info("truncated by leader epoch", "from", fs.LogEnd, "to", end,
			"asked_epoch", q.epoch, "answered_epoch", a.LeaderEpoch, "answered_end_offset", a.EndOffset, "done", t.done)
	}
	if t.done {
		p.setFetching(end)
	} else {
		p.setAsk(t.nextAsk, end)
	}
	return false
}

// truncateWithoutEpochs handles a replica with no epoch history to ask
// about. An empty log has nothing to keep. A log with records but no
// epochs (its leader-epoch-checkpoint was lost) cannot be compared with
// the leader's, so, as Kafka does for such logs, it keeps only what it
// knows was committed: it is cut at its high watermark. It reports
// whether the partition is to be dropped.
func (f *fetcher) truncateWithoutEpochs(p *partition) (drop bool) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.gone {
		return false
	}
	fs, ok, drop := f.followerStateLocked(p)
	if !ok {
		return drop
	}
	end := fs.LogEnd
	if hw := p.r.Offsets().HighWater; end > fs.LogStart && hw < end {
		if err := p.r.TruncateTo(p.epoch, hw); err != nil {
			return f.replicaFailed(p, fmt.Errorf("truncate to high watermark %d: %w", hw, err), true)
		}
		end = p.r.Offsets().LogEnd
		p.log.Warn("log has records but no leader epoch history: truncated to its high watermark", "from", fs.LogEnd, "to", end)
	}
	p.setFetching(end)
	return false
}

// followerState reads the replica's follower state for a partition about
// to be worked on. ok=false: skip it (it was backed off, or it is to be
// dropped, drop=true).
func (f *fetcher) followerState(p *partition) (fs replica.FollowerState, ok, drop bool) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.gone {
		return fs, false, false
	}
	return f.followerStateLocked(p)
}

// followerStateLocked is followerState with p.applyMu held. A replica
// that follows another leader, or a later epoch, has moved on and its
// partition is dropped (the broker calls Follow again). One at an older
// epoch has not applied the metadata this Follow came from yet: wait.
func (f *fetcher) followerStateLocked(p *partition) (fs replica.FollowerState, ok, drop bool) {
	fs, err := p.r.FollowerState()
	if err != nil {
		return fs, false, f.replicaFailed(p, err, false)
	}
	switch {
	case fs.LeaderEpoch < p.epoch:
		p.delay(f.m.cfg.Backoff, fmt.Errorf("%w: replica is at leader %d epoch %d, behind this fetcher's epoch %d",
			errReplicaBehind, fs.LeaderID, fs.LeaderEpoch, p.epoch), true)
		return fs, false, false
	case fs.LeaderEpoch > p.epoch || fs.LeaderID != p.leader:
		p.stop(fmt.Errorf("%w: replica is at leader %d epoch %d", replica.ErrNotFollower, fs.LeaderID, fs.LeaderEpoch))
		return fs, false, true
	}
	return fs, true, false
}

// errReplicaBehind: Follow named an epoch the replica has not reached.
var errReplicaBehind = errors.New("replica behind the followed epoch")

// replicaFailed handles an error from the replica: one saying it moved on
// stops the partition (drop=true); anything else (a storage error) is
// retried after the backoff, from truncation if truncate is set. Data is
// never skipped: the same offsets are fetched again.
func (f *fetcher) replicaFailed(p *partition, err error, truncate bool) (drop bool) {
	if errors.Is(err, replica.ErrNotFollower) || errors.Is(err, replica.ErrRemoved) {
		p.stop(err)
		return true
	}
	p.delay(f.m.cfg.Backoff, err, truncate)
	return false
}
