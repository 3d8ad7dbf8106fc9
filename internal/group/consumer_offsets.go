package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// checkConsumerCommit applies Kafka's rules for offset commits to a
// consumer group. A commit from outside the group (generation -1) is
// accepted only while the group is empty. A member commits with OffsetCommit
// v9+ and its member epoch; an older epoch is still accepted for the
// partitions it has owned since that epoch (KIP-1251), because its
// heartbeat may have moved the epoch on while the commit was in flight.
// It returns the entries refused with STALE_MEMBER_EPOCH, or an error for
// the whole commit.
func (c *Coordinator) checkConsumerCommit(g *group, req CommitRequest, valid []int) (map[int]bool, error) {
	cg := g.consumer
	if req.Generation < 0 && len(cg.members) == 0 {
		return nil, nil
	}
	m := cg.members[req.MemberID]
	switch {
	case m == nil:
		return nil, kerr.UnknownMemberID
	case req.APIVersion < 9:
		return nil, kerr.UnsupportedVersion
	case req.Generation > m.epoch:
		return nil, kerr.StaleMemberEpoch
	case req.Generation == m.epoch:
		return nil, nil
	}
	stale := map[int]bool{}
	for _, i := range valid {
		o := req.Offsets[i]
		since, owned := -1, false
		if c.cfg.TopicMeta != nil {
			if id, _, ok := c.cfg.TopicMeta.TopicByName(o.Topic); ok {
				var e int32
				e, owned = m.since[tidp{id, o.Partition}]
				since = int(e)
			}
		}
		if !owned || since > int(req.Generation) {
			stale[i] = true
		}
	}
	return stale, nil
}

// FetchOffsetsAs is FetchOffsets for OffsetFetch v9+, which may name the
// member asking: a member of a consumer group must be known and send its
// current epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH otherwise). A
// request without member id and with epoch -1 comes from outside the
// group and is always served.
func (c *Coordinator) FetchOffsetsAs(groupID string, memberID *string, memberEpoch int32, topics []TopicPartitions) ([]FetchedOffset, error) {
	if memberID != nil || memberEpoch >= 0 {
		g, err := c.lockOffsetsGroup(groupID, false)
		if err != nil {
			return nil, err
		}
		if g != nil {
			err = nil
			if cg := g.consumer; cg != nil {
				switch m := cg.members[deref(memberID)]; {
				case m == nil:
					err = kerr.UnknownMemberID
				case m.epoch != memberEpoch:
					err = kerr.StaleMemberEpoch
				}
			}
			g.mu.Unlock()
			if err != nil {
				return nil, err
			}
		}
	}
	return c.FetchOffsets(groupID, topics)
}

// expireConsumerGroup expires the offsets of topics no member subscribes
// to once they are older than offsets.retention.minutes (Kafka's rule for
// consumer groups), and deletes an empty group left without offsets.
func (c *Coordinator) expireConsumerGroup(g *group, now time.Time) int {
	cg := g.consumer
	if g.consumerWrite != nil {
		return 0 // its members are changing: look again next pass
	}
	subscribed := c.consumerSubscribed(cg)
	var recs []Record
	var gone []tp
	for t, o := range g.offsets {
		if subscribed[t.topic] || g.pendingOffsets[t] > 0 {
			continue // consumed now (no retention rule applies), or being committed
		}
		expired := !now.Before(o.CommitTime.Add(c.cfg.OffsetsRetention))
		if !o.ExpireTime.IsZero() {
			expired = !now.Before(o.ExpireTime)
		}
		if expired {
			recs = append(recs, offsetTombstone(g.id, t))
			gone = append(gone, t)
		}
	}
	deleteGroup := len(cg.members) == 0 && len(gone) == len(g.offsets) && len(g.writes) == 0
	if deleteGroup {
		for _, r := range cg.deletionRecords(g.id) {
			recs = append(recs, r.encode())
		}
	}
	return c.writeExpiry(g, recs, gone, deleteGroup)
}
