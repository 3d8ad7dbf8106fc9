package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// sentPartition is one partition of a fetch in flight.
type sentPartition struct {
	p        *partition
	offset   int64 // the fetch offset: the local log end when sent
	answered bool
	// noData: the local log cannot take writes; the fetch asked for
	// nothing (PartitionMaxBytes 0), which tells the leader so.
	noData bool
}

// fetch sends one Fetch for the given partitions and applies the answer.
// gen is the fetcher's addition count the list reflects: if a partition
// was added since, nothing is sent (the next round includes it). The
// error is a connection failure; a fetch cut short by an addition is not.
// due is when a partition left out (backing off, or waiting for throttle
// budget) may be fetched again; zero if none.
func (f *fetcher) fetch(parts []*partition, gen uint64, budget int64, due time.Time) error {
	req, sent, drops := f.buildFetch(parts, budget, due)
	defer func() { f.m.detachAll(drops) }()
	if len(sent) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	f.mu.Lock()
	if f.added != gen {
		f.mu.Unlock()
		return nil
	}
	f.inflight = cancel
	f.mu.Unlock()
	resp, err := f.client.Fetch(ctx, req)
	f.mu.Lock()
	f.inflight = nil
	f.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil && f.ctx.Err() == nil {
			return nil // cut short by an addition: fetch again with it
		}
		return err
	}
	if resp.ErrorCode != 0 {
		err := fmt.Errorf("fetch: %w", kerr.ErrorForCode(resp.ErrorCode))
		for _, s := range sent {
			s.p.delay(f.m.cfg.Backoff, err, false)
		}
		return nil
	}
	byName := map[string]map[int32]*sentPartition{}
	byID := map[[16]byte]map[int32]*sentPartition{}
	for i := range sent {
		s := &sent[i]
		if byName[s.p.tp.Topic] == nil {
			byName[s.p.tp.Topic] = map[int32]*sentPartition{}
		}
		byName[s.p.tp.Topic][s.p.tp.Partition] = s
		if s.p.topicID != ([16]byte{}) {
			if byID[s.p.topicID] == nil {
				byID[s.p.topicID] = map[int32]*sentPartition{}
			}
			byID[s.p.topicID][s.p.tp.Partition] = s
		}
	}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		// v13+ name topics by id, older versions by name.
		idx := byName[rt.Topic]
		if rt.TopicID != ([16]byte{}) {
			idx = byID[rt.TopicID]
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			s := idx[rp.Partition]
			if s == nil || s.answered {
				continue // not asked for, or named twice
			}
			s.answered = true
			if f.apply(s, rp) {
				drops = append(drops, s.p)
			}
		}
	}
	// A partition the leader left out is simply fetched again.
	return nil
}

// buildFetch makes the request: every version's replica id fields, the
// current leader epoch per partition (so a deposed leader answers
// FENCED_LEADER_EPOCH instead of data), and both the topic name and id
// (v0-12 read the name, v13+ the id). Throttled partitions share budget
// bytes (throttle.go); once it is given out the rest of them wait.
//
// The long poll ends by due at the latest, when a partition left out is
// to be fetched again: otherwise a partition backing off for 20 ms after
// its leader did not know its topic yet would wait out a whole
// replica.fetch.wait.max.ms behind partitions that have nothing new.
func (f *fetcher) buildFetch(parts []*partition, budget int64, due time.Time) (*kmsg.FetchRequest, []sentPartition, []*partition) {
	cfg := f.m.cfg
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = cfg.LocalID
	req.ReplicaState.ID = cfg.LocalID
	req.ReplicaState.Epoch = f.m.brokerEpoch.Load()
	wait := cfg.MaxWait
	if !due.IsZero() {
		wait = min(wait, max(time.Until(due), 0))
	}
	req.MaxWaitMillis = int32(min((wait + time.Millisecond - 1).Milliseconds(), 1<<31-1))
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.MaxBytes
	req.IsolationLevel = 0                  // followers copy everything, open transactions too
	req.SessionID, req.SessionEpoch = 0, -1 // full fetches, no session
	type topicKey struct {
		name string
		id   [16]byte
	}
	topics := map[topicKey]int{}
	var sent []sentPartition
	var drops []*partition
	for _, p := range parts {
		fs, ok, drop := f.followerState(p)
		if drop {
			drops = append(drops, p)
		}
		if !ok {
			continue
		}
		p.noteWritable(fs.CannotWrite)
		maxBytes := cfg.PartitionMaxBytes
		switch {
		case fs.CannotWrite != nil:
			// Asks for nothing, which tells the leader this log cannot
			// take writes (replica.FollowerFetch.CannotWrite).
			maxBytes = 0
		case p.throttled.Load():
			if budget <= 0 {
				continue
			}
			maxBytes = int32(min(int64(maxBytes), budget))
			budget -= int64(maxBytes)
		}
		k := topicKey{p.tp.Topic, p.topicID}
		i, seen := topics[k]
		if !seen {
			i = len(req.Topics)
			topics[k] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.tp.Topic, p.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.CurrentLeaderEpoch = p.epoch
		rp.FetchOffset = fs.LogEnd
		// Divergence is found through OffsetForLeaderEpoch before
		// fetching, not through the fetch's diverging epoch (KIP-595).
		rp.LastFetchedEpoch = -1
		rp.LogStartOffset = fs.DurableLogStart
		rp.PartitionMaxBytes = maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent = append(sent, sentPartition{p: p, offset: fs.LogEnd, noData: fs.CannotWrite != nil})
	}
	return req, sent, drops
}

// apply applies one partition's answer; it reports whether the partition
// is to be dropped (the replica moved on).
func (f *fetcher) apply(s *sentPartition, rp *kmsg.FetchResponseTopicPartition) (drop bool) {
	p := s.p
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.gone {
		return false // unfollowed while the fetch was in flight
	}
	switch rp.ErrorCode {
	case 0:
		return f.applyData(s, rp)
	case kerr.OffsetOutOfRange.Code:
		return f.outOfRange(s, rp.LogStartOffset)
	}
	// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH:
	// our metadata or the leader's is behind; once both agree (a new
	// Follow, or the leader catching up), truncate again and go on.
	// KAFKA_STORAGE_ERROR, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID and
	// anything else: the same fetch again, later.
	truncate := rp.ErrorCode == kerr.NotLeaderForPartition.Code || rp.ErrorCode == kerr.FencedLeaderEpoch.Code ||
		rp.ErrorCode == kerr.UnknownLeaderEpoch.Code
	p.delayAfter(f.m.cfg.Backoff, rp.ErrorCode, fmt.Errorf("fetch at offset %d: %w", s.offset, kerr.ErrorForCode(rp.ErrorCode)), truncate)
	return false
}

// applyData appends the fetched batches verbatim and takes the leader's
// high watermark and log start offset. Callers hold p.applyMu.
func (f *fetcher) applyData(s *sentPartition, rp *kmsg.FetchResponseTopicPartition) (drop bool) {
	p := s.p
	fs, ok, drop := f.followerStateLocked(p)
	if !ok {
		return drop
	}
	if fs.LogEnd != s.offset {
		// The log moved since the fetch was built (it cannot within one
		// Follow, which owns the replica): its answer does not fit.
		return false
	}
	records, err := wholeBatches(rp.RecordBatches)
	if err != nil {
		p.delay(f.m.cfg.Backoff, fmt.Errorf("fetch at offset %d: %w", s.offset, err), false)
		return false
	}
	if s.noData {
		records = nil // asked for none: whatever came is not for a log that cannot take it
	}
	end := fs.LogEnd
	if p.throttled.Load() {
		f.m.throttle.charge(len(records))
	}
	if len(records) > 0 {
		info, err := f.appendBatches(p, fs, records)
		if err != nil {
			// A batch that does not line up with the log end means the
			// logs differ where we thought they agreed: truncate again.
			return f.replicaFailed(p, fmt.Errorf("append at offset %d: %w", s.offset, err), errors.Is(err, storage.ErrUnexpectedOffset))
		}
		end = info.LastOffset + 1
		if obs := f.m.cfg.Observer; obs != nil {
			obs.ReplicatedIn(p.tp.Topic, int64(len(records)))
		}
	}
	if err := p.r.UpdateFollowerHW(p.epoch, rp.HighWatermark); err != nil {
		return f.replicaFailed(p, fmt.Errorf("follow high watermark %d: %w", rp.HighWatermark, err), false)
	}
	// A log that cannot take writes (a full disk) cannot checkpoint a
	// raised start either: it keeps reporting its durable one, which
	// holds DeleteRecords back as a failed write would, and takes the
	// leader's once it can write again, instead of failing (and logging)
	// every fetch meanwhile.
	if (rp.LogStartOffset > fs.LogStart || fs.DurableLogStart < fs.LogStart) && !p.cannotWrite.Load() {
		if err := p.r.UpdateFollowerLogStart(p.epoch, rp.LogStartOffset); err != nil {
			return f.replicaFailed(p, err, false)
		}
	}
	p.fetched(end, rp.HighWatermark)
	return false
}

// appendBatches appends as a follower. One case is fixed up as Kafka does:
// an empty log restarted at the leader's log start, which DeleteRecords
// may have put inside a batch, receives that whole batch, starting below
// the log end; the log then starts at the batch's base offset instead.
func (f *fetcher) appendBatches(p *partition, fs replica.FollowerState, records []byte) (storage.AppendInfo, error) {
	info, err := p.r.AppendAsFollower(p.epoch, records)
	if !errors.Is(err, storage.ErrUnexpectedOffset) || fs.LogEnd != fs.LogStart {
		return info, err
	}
	h, herr := recordbatch.ParseHeader(records)
	if herr != nil || h.BaseOffset >= fs.LogEnd || h.LastOffset() < fs.LogEnd {
		return info, err
	}
	if err := p.r.TruncateFullyAndStartAt(p.epoch, h.BaseOffset); err != nil {
		return info, err
	}
	p.log.Info("leader's first batch starts below this empty log's start: restarted the log at the batch",
		"from", fs.LogEnd, "to", h.BaseOffset)
	return p.r.AppendAsFollower(p.epoch, records)
}

// outOfRange handles OFFSET_OUT_OF_RANGE. Below the leader's log start
// (this replica was away while the leader's retention or DeleteRecords
// moved on), the log is emptied and restarted there. Otherwise the log
// end is past the leader's (an unclean election, or a leader that lost
// data): truncate by epoch again. Callers hold p.applyMu.
func (f *fetcher) outOfRange(s *sentPartition, leaderStart int64) (drop bool) {
	p := s.p
	fs, ok, drop := f.followerStateLocked(p)
	if !ok {
		return drop
	}
	if leaderStart >= 0 && fs.LogEnd < leaderStart {
		if err := p.r.TruncateFullyAndStartAt(p.epoch, leaderStart); err != nil {
			return f.replicaFailed(p, fmt.Errorf("restart log at leader's log start %d: %w", leaderStart, err), false)
		}
		p.log.Warn("log end below the leader's log start: emptied the log and restarted it there",
			"from", fs.LogEnd, "to", leaderStart)
		p.setFetching(leaderStart)
		return false
	}
	p.retruncate(f.m.cfg.Backoff, fs.LogEnd, fmt.Errorf("fetch at offset %d: %w (leader log start %d)", s.offset, kerr.OffsetOutOfRange, leaderStart))
	return false
}

// wholeBatches returns the complete batches at the start of b. A leader
// may end a response with part of a batch (Kafka slices segment files by
// bytes); that part is fetched again whole next time. A bad header is an
// error: the bytes are not record batches.
func wholeBatches(b []byte) ([]byte, error) {
	pos := 0
	for pos < len(b) {
		if len(b)-pos < recordbatch.HeaderSize {
			break
		}
		h, err := recordbatch.ParseHeader(b[pos:])
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if h.Size() > int64(len(b)-pos) {
			break
		}
		pos += int(h.Size())
	}
	if pos == 0 && len(b) > 0 {
		return nil, fmt.Errorf("%w: response holds %d bytes, less than its first batch", recordbatch.ErrCorrupt, len(b))
	}
	return b[:pos], nil
}
