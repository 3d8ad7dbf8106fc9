package group

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommitRequest is an OffsetCommit, version-independent.
type CommitRequest struct {
	Group      string
	MemberID   string // "" with Generation -1: a commit from outside group management
	InstanceID string
	Generation int32
	// Retention is OffsetCommit v2-v4's retention time (<= 0: none).
	Retention time.Duration
	// APIVersion is the OffsetCommit version: members of a consumer
	// (KIP-848) group must commit with v9+, their member epoch as
	// Generation.
	APIVersion int16
	Offsets    []CommitOffset
}

// CommitOffset is one partition's commit.
type CommitOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// CommitOffsets validates and stores a commit. It returns one error per
// entry of req.Offsets (nil = stored). Nothing is stored for an entry
// that fails, and nothing at all when the member is not entitled to
// commit (Kafka's rules: a group with members accepts commits only from
// a current member of the current generation; an empty group also from
// outside group management). ctx is the request's: the wait for the
// commit takes its values (the broker's wait clock, which counts the wait
// as the request's remote time), not its end.
func (c *Coordinator) CommitOffsets(ctx context.Context, req CommitRequest) []error {
	errs := make([]error, len(req.Offsets))
	var valid []int
	for i, o := range req.Offsets {
		switch {
		case !c.partitionExists(o.Topic, o.Partition):
			errs[i] = kerr.UnknownTopicOrPartition
		case len(o.Metadata) > c.cfg.MaxMetadataSize:
			errs[i] = kerr.OffsetMetadataTooLarge
		default:
			valid = append(valid, i)
		}
	}
	setAll := func(err error) []error {
		for _, i := range valid {
			errs[i] = err
		}
		return errs
	}
	if len(valid) == 0 {
		if err := c.checkOffsetsGroup(req.Group); err != nil {
			return setAll(err)
		}
		return errs
	}
	g, err := c.lockGroupIdle(ctx, req.Group, req.Generation < 0, true, false)
	if err != nil {
		return setAll(err)
	}
	if g == nil {
		// A generation for a group that does not exist: a stale member.
		// Kafka keeps ILLEGAL_GENERATION for old clients; from v9 it says
		// what happened, which works for both group protocols.
		if req.APIVersion >= 9 {
			return setAll(kerr.GroupIDNotFound)
		}
		return setAll(kerr.IllegalGeneration)
	}
	defer c.unlockMaybeForget(g)
	if g.consumer != nil {
		stale, err := c.checkConsumerCommit(g, req, valid)
		if err != nil {
			return setAll(err)
		}
		kept := valid[:0]
		for _, i := range valid {
			if stale[i] {
				errs[i] = kerr.StaleMemberEpoch
			} else {
				kept = append(kept, i)
			}
		}
		if valid = kept; len(valid) == 0 {
			return errs
		}
	} else if err := c.checkCommitter(g, req); err != nil {
		return setAll(err)
	}
	now := c.clock.Now()
	recs := make([]Record, 0, len(valid))
	stored := make([]Offset, 0, len(valid))
	tps := make([]tp, 0, len(valid))
	kept := valid[:0]
	for _, i := range valid {
		o := req.Offsets[i]
		// Looked up again under the group's lock, which a deletion's
		// sweep takes too (deleted.go): a commit either lands before the
		// sweep looks at the group, or sees the topic gone, or records
		// the id that tells its offset from the re-created topic's.
		id, ok := c.livePartition(o.Topic, o.Partition)
		if !ok {
			errs[i] = kerr.UnknownTopicOrPartition
			continue
		}
		off := Offset{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTime: now, TopicID: id}
		if req.Retention > 0 {
			off.ExpireTime = now.Add(req.Retention)
		}
		kept = append(kept, i)
		t := tp{o.Topic, o.Partition}
		recs = append(recs, offsetRecord(g.id, t, off))
		stored = append(stored, off)
		tps = append(tps, t)
	}
	if valid = kept; len(valid) == 0 {
		return errs
	}
	// Pending until committed: OffsetFetch answers the previous offset
	// meanwhile, as Kafka's GroupMetadata.offset does.
	for _, t := range tps {
		g.pendingOffsets[t]++
	}
	var result error
	w, err := c.write(g, recs, plainWrite, func(err error) {
		g.donePending(tps)
		result = err
		if err == nil && g.state != Dead {
			var gone []tp
			for j, t := range tps {
				g.offsets[t] = stored[j]
				if c.offsetGone(t, stored[j], nil) {
					gone = append(gone, t) // its topic was deleted meanwhile
				}
			}
			c.dropOffsets(g, gone)
		}
	})
	if err != nil {
		g.donePending(tps)
		result = err
	} else {
		c.wait(ctx, g, w)
	}
	if result != nil {
		c.log.Warn("store offset commit", "group", g.id, "err", result)
		return setAll(storeError(result))
	}
	return errs
}

// donePending counts off commits of tps that completed (either way).
func (g *group) donePending(tps []tp) {
	for _, t := range tps {
		if g.pendingOffsets[t]--; g.pendingOffsets[t] <= 0 {
			delete(g.pendingOffsets, t)
		}
	}
}

// checkCommitter applies Kafka's rules for who may commit to g.
func (c *Coordinator) checkCommitter(g *group, req CommitRequest) error {
	if g.staticFenced(req.MemberID, req.InstanceID) {
		return kerr.FencedInstanceID
	}
	if req.Generation < 0 && g.state == Empty {
		return nil
	}
	if g.state == CompletingRebalance {
		return kerr.RebalanceInProgress
	}
	m := g.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	// A commit proves the member alive, as a heartbeat does.
	c.scheduleHeartbeat(g, m)
	return nil
}

// TopicPartitions names partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// FetchedOffset is one partition's committed offset (-1 if none).
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// Pending: a commit of the partition is appended but not committed
	// yet. Offset is the previous commit's; an OffsetFetch with
	// RequireStable (v7+) answers such a partition UNSTABLE_OFFSET_COMMIT
	// with offset -1, as Kafka does (hasPendingOffsetCommitsForTopicPartition).
	Pending bool
}

// FetchOffsets returns the committed offsets of the named partitions, or
// with topics nil, of every partition the group committed, sorted.
// Partitions without a commit have offset -1.
func (c *Coordinator) FetchOffsets(groupID string, topics []TopicPartitions) ([]FetchedOffset, error) {
	g, err := c.lockOffsetsGroup(groupID, false)
	if err != nil {
		return nil, err
	}
	var offsets map[tp]Offset
	var pending map[tp]int
	if g != nil {
		offsets, pending = g.offsets, g.pendingOffsets
		defer g.mu.Unlock()
	}
	var out []FetchedOffset
	if topics == nil {
		// The committed partitions, as Kafka lists them (a partition
		// whose first commit is still pending is not one yet).
		for t, o := range offsets {
			if c.offsetGone(t, o, nil) {
				continue // being removed with its topic (deleted.go)
			}
			out = append(out, FetchedOffset{Topic: t.topic, Partition: t.partition, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, Pending: pending[t] > 0})
		}
		slices.SortFunc(out, func(a, b FetchedOffset) int {
			if a.Topic != b.Topic {
				if a.Topic < b.Topic {
					return -1
				}
				return 1
			}
			return int(a.Partition - b.Partition)
		})
		return out, nil
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			f := FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1, Pending: pending[tp{t.Topic, p}] > 0}
			if o, ok := offsets[tp{t.Topic, p}]; ok && !c.offsetGone(tp{t.Topic, p}, o, nil) {
				f.Offset, f.LeaderEpoch, f.Metadata = o.Offset, o.LeaderEpoch, o.Metadata
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// DeleteOffsets removes committed offsets (OffsetDelete). Partitions of
// topics the group's members still subscribe to are refused with
// GROUP_SUBSCRIBED_TO_TOPIC. Returns the group-level error and one
// error per partition, in order. ctx is the request's, for its wait
// clock.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, topics []TopicPartitions) ([][]error, error) {
	errs := make([][]error, len(topics))
	for i, t := range topics {
		errs[i] = make([]error, len(t.Partitions))
	}
	g, err := c.lockGroupIdle(ctx, groupID, false, false, false)
	if err != nil {
		return errs, err
	}
	if g == nil {
		return errs, kerr.GroupIDNotFound
	}
	defer c.unlockMaybeForget(g)
	subscribed, known := g.subscribedTopics()
	if g.consumer != nil {
		// Regex subscriptions count too: their topics are being consumed.
		subscribed = c.consumerSubscribed(g.consumer)
	}
	if g.state != Empty && !known {
		// Members with a protocol we cannot read: any topic may be theirs.
		return errs, kerr.NonEmptyGroup
	}
	var recs []Record
	var gone []tp
	for i, t := range topics {
		for j, p := range t.Partitions {
			if g.state != Empty && subscribed[t.Topic] {
				errs[i][j] = kerr.GroupSubscribedToTopic
				continue
			}
			if g.hasOffset(tp{t.Topic, p}) {
				recs = append(recs, offsetTombstone(g.id, tp{t.Topic, p}))
				gone = append(gone, tp{t.Topic, p})
			}
		}
	}
	if len(recs) == 0 {
		return errs, nil
	}
	// Completions run in log order: a pending commit of a partition
	// lands before its tombstone, and one appended later after it.
	var result error
	w, err := c.write(g, recs, plainWrite, func(err error) {
		result = err
		if err == nil && g.state != Dead {
			for _, t := range gone {
				delete(g.offsets, t)
			}
		}
	})
	if err != nil {
		return errs, storeError(err)
	}
	c.wait(ctx, g, w)
	if result != nil {
		return errs, storeError(result)
	}
	return errs, nil
}

// hasOffset: t has a committed offset or a commit in flight.
func (g *group) hasOffset(t tp) bool {
	_, ok := g.offsets[t]
	return ok || g.pendingOffsets[t] > 0
}

// subscribedTopics is the union of the members' subscriptions, when the
// group uses the consumer protocol (whose metadata we can read).
func (g *group) subscribedTopics() (map[string]bool, bool) {
	if g.consumer != nil {
		return g.consumer.subscribedNames(), true
	}
	if g.protocolType != "consumer" {
		return nil, len(g.members) == 0
	}
	out := map[string]bool{}
	for _, m := range g.members {
		meta := m.metadataFor(g.protocol)
		if meta == nil {
			continue
		}
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(meta); err != nil {
			return nil, false
		}
		for _, t := range cm.Topics {
			out[t] = true
		}
	}
	return out, true
}
