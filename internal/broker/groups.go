package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/internal/server"
)

// The group APIs translate Kafka's versioned requests into the group
// coordinator's version-independent ones and back; the rules live in
// internal/group.

// Coordinator key types of FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (b *Broker) handleFindCoordinator(ctx context.Context, rc *server.RequestContext, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		resp.Coordinators = append(resp.Coordinators, b.findCoordinator(ctx, rc, req.CoordinatorType, key))
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
	}
	return resp, nil
}

func (b *Broker) findCoordinator(ctx context.Context, rc *server.RequestContext, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(code *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = code.Code, &msg
		return c
	}
	switch keyType {
	case coordinatorGroup:
	case coordinatorTransaction:
		return fail(kerr.CoordinatorNotAvailable, "transactions are not supported yet")
	default:
		return fail(kerr.InvalidRequest, fmt.Sprintf("unknown coordinator key type %d", keyType))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t, err := b.ensureOffsetsTopic(ctx)
	if err != nil {
		b.log.Warn("find coordinator", "group", key, "err", err)
		return fail(kerr.CoordinatorNotAvailable, err.Error())
	}
	img := b.meta.Image()
	p, ok := img.Partition(offsetsTopic, group.PartitionFor(key, int32(len(t.Partitions))))
	if !ok || p.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable, "the group's partition of __consumer_offsets has no leader")
	}
	br, ok := img.Broker(p.Leader)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable, fmt.Sprintf("coordinator broker %d is not registered", p.Leader))
	}
	c.NodeID, c.Host, c.Port = br.ID, br.Host, br.Port
	for _, ep := range br.Endpoints {
		if ep.Listener == rc.Listener {
			c.Host, c.Port = ep.Host, ep.Port
		}
	}
	return c
}

// clientHost is how Kafka shows a member's host: "/" and its address.
func clientHost(rc *server.RequestContext) string {
	if rc == nil || rc.RemoteAddr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(rc.RemoteAddr.String())
	if err != nil {
		host = rc.RemoteAddr.String()
	}
	return "/" + host
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

func ptr(s string) *string { return &s }

// kcode is the code of a coordinator error (nil = NONE).
func kcode(err error) int16 { return errorCode(err) }

func (b *Broker) handleJoinGroup(ctx context.Context, rc *server.RequestContext, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	jr := group.JoinRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: deref(req.InstanceID),
		ClientID: rc.ClientID, ClientHost: clientHost(rc),
		SessionTimeout:       millis(req.SessionTimeoutMillis),
		RebalanceTimeout:     millis(req.RebalanceTimeoutMillis),
		ProtocolType:         req.ProtocolType,
		RequireKnownMemberID: req.Version >= 4,
	}
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		// v0 has no rebalance timeout: the session timeout served as one.
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	r := b.groups.Join(ctx, jr)
	var err error
	if r.Err != nil {
		err = r.Err
	}
	resp.ErrorCode = kcode(err)
	resp.Generation, resp.MemberID, resp.LeaderID = r.Generation, r.MemberID, r.Leader
	resp.SkipAssignment = r.SkipAssignment
	if r.Err == nil || req.Version < 7 {
		// Before v7 the protocol is not nullable.
		resp.ProtocolType, resp.Protocol = ptr(r.ProtocolType), ptr(r.Protocol)
	}
	for _, m := range r.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
		if m.InstanceID != "" {
			rm.InstanceID = ptr(m.InstanceID)
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

func (b *Broker) handleSyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	sr := group.SyncRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: deref(req.InstanceID),
		Generation: req.Generation, ProtocolType: deref(req.ProtocolType), Protocol: deref(req.Protocol),
		Assignments: map[string][]byte{},
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments[a.MemberID] = a.MemberAssignment
	}
	r := b.groups.Sync(ctx, sr)
	if r.Err != nil {
		resp.ErrorCode = r.Err.Code
		resp.MemberAssignment = []byte{}
		return resp, nil
	}
	resp.MemberAssignment = r.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	resp.ProtocolType, resp.Protocol = ptr(r.ProtocolType), ptr(r.Protocol)
	return resp, nil
}

func (b *Broker) handleHeartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = kcode(b.groups.Heartbeat(group.HeartbeatRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: deref(req.InstanceID), Generation: req.Generation,
	}))
	return resp, nil
}

func (b *Broker) handleLeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	var members []group.LeavingMember
	if req.Version < 3 {
		members = []group.LeavingMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			members = append(members, group.LeavingMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	errs, err := b.groups.Leave(req.Group, members)
	if err != nil {
		resp.ErrorCode = kcode(err)
		return resp, nil
	}
	for i, m := range members {
		code := kcode(errs[i])
		if req.Version < 3 && resp.ErrorCode == 0 {
			// Before v3 there are no member entries: the member's error
			// is the top-level one. From v3 Kafka keeps them apart.
			resp.ErrorCode = code
		}
		if req.Version >= 3 {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.ErrorCode = m.MemberID, code
			if m.InstanceID != "" {
				rm.InstanceID = ptr(m.InstanceID)
			}
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp, nil
}

// handleOffsetCommit commits a group's offsets. A partition named more than
// once is committed once, with its last copy, and answered once: Kafka
// keeps the commit in a map by partition (KafkaApis.handleOffsetCommitRequest).
func (b *Broker) handleOffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := group.CommitRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: deref(req.InstanceID), Generation: req.Generation,
		APIVersion: req.Version,
	}
	if req.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis > 0 {
		cr.Retention = time.Duration(req.RetentionTimeMillis) * time.Millisecond
	}
	topics, _ := distinctPartitions(req.Topics, func(t kmsg.OffsetCommitRequestTopic) topicKey { return topicByName(t.Topic) },
		func(t kmsg.OffsetCommitRequestTopic) []kmsg.OffsetCommitRequestTopicPartition { return t.Partitions },
		func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
	for _, g := range topics {
		t := g.topic
		for _, p := range g.parts {
			epoch := p.LeaderEpoch
			if req.Version < 6 {
				epoch = -1
			}
			cr.Offsets = append(cr.Offsets, group.CommitOffset{
				Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: deref(p.Metadata),
			})
		}
	}
	errs := b.groups.CommitOffsets(ctx, cr)
	i := 0
	for _, g := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = g.topic.Topic
		for _, p := range g.parts {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kcode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// handleOffsetFetch returns committed offsets. Each group (v8+) and each
// partition is answered once however often it is named: Kafka keeps them
// in maps (KafkaApis.handleOffsetFetchRequest).
//
// Out of its session (mayBeStale) this broker may coordinate groups that
// have moved to a successor which has taken newer commits: its offsets
// would send a consumer back over records already processed, or, for a
// group it holds none of, to auto.offset.reset. It answers
// COORDINATOR_LOAD_IN_PROGRESS (it cannot vouch for the group's state
// yet), which every client retries in place until the broker is back in
// its session or has learned that the group moved (NOT_COORDINATOR, as
// Kafka answers then). Not NOT_COORDINATOR now: librdkafka's assign()
// never retries an OffsetFetch refused so (librdkafka issue 5586), and
// the partition would stay unread. Kafka serves these reads; the price
// here is that a consumer cannot start from committed offsets while no
// controller quorum answers.
func (b *Broker) handleOffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	stale := b.mayBeStale()
	if req.Version >= 8 {
		idx, _ := distinct(req.Groups, func(g kmsg.OffsetFetchRequestGroup) string { return g.Group })
		for _, i := range idx {
			g := req.Groups[i]
			var topics []group.TopicPartitions
			if g.Topics != nil {
				topics = fetchTopics(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) (string, []int32) { return t.Topic, t.Partitions })
			}
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			memberEpoch := g.MemberEpoch
			if req.Version < 9 {
				memberEpoch = -1 // v9 (KIP-848) added the member id and epoch
			}
			offsets, err := []group.FetchedOffset(nil), errStaleCoordinator
			if !stale {
				offsets, err = b.groups.FetchOffsetsAs(g.Group, g.MemberID, memberEpoch, topics)
			}
			rg.ErrorCode = kcode(err)
			var cur *kmsg.OffsetFetchResponseGroupTopic
			for _, o := range offsets {
				if cur == nil || cur.Topic != o.Topic {
					rg.Topics = append(rg.Topics, kmsg.NewOffsetFetchResponseGroupTopic())
					cur = &rg.Topics[len(rg.Topics)-1]
					cur.Topic = o.Topic
				}
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Partition, o.Offset, o.LeaderEpoch, ptr(o.Metadata)
				if unstable(req, o) {
					rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = -1, -1, ptr(""), kerr.UnstableOffsetCommit.Code
				}
				cur.Partitions = append(cur.Partitions, rp)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil
	}
	var topics []group.TopicPartitions
	if req.Topics != nil || req.Version < 2 {
		topics = fetchTopics(req.Topics, func(t kmsg.OffsetFetchRequestTopic) (string, []int32) { return t.Topic, t.Partitions })
	}
	offsets, err := []group.FetchedOffset(nil), errStaleCoordinator
	if !stale {
		offsets, err = b.groups.FetchOffsets(req.Group, topics)
	}
	code := kcode(err)
	if err != nil && req.Version < 2 {
		// No group-level error before v2: every partition carries it.
		for _, t := range topics {
			for _, p := range t.Partitions {
				offsets = append(offsets, group.FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1})
			}
		}
	}
	resp.ErrorCode = code
	var cur *kmsg.OffsetFetchResponseTopic
	for _, o := range offsets {
		if cur == nil || cur.Topic != o.Topic {
			resp.Topics = append(resp.Topics, kmsg.NewOffsetFetchResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.Topic = o.Topic
		}
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Partition, o.Offset, o.LeaderEpoch, ptr(o.Metadata)
		if req.Version < 2 {
			rp.ErrorCode = code
		}
		if unstable(req, o) {
			rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = -1, -1, ptr(""), kerr.UnstableOffsetCommit.Code
		}
		cur.Partitions = append(cur.Partitions, rp)
	}
	return resp, nil
}

// errStaleCoordinator answers an OffsetFetch out of session.
var errStaleCoordinator = fmt.Errorf("%w: no heartbeat got through for the session timeout: the group may have moved", kerr.CoordinatorLoadInProgress)

// unstable: a RequireStable fetch (v7+) names a partition whose newer
// commit is appended but not yet replicated; as Kafka does for pending
// commits, it is answered UNSTABLE_OFFSET_COMMIT with no offset, and the
// client retries until the commit settles either way.
func unstable(req *kmsg.OffsetFetchRequest, o group.FetchedOffset) bool {
	return req.Version >= 7 && req.RequireStable && o.Pending
}

// fetchTopics turns the topics of an OffsetFetch into the coordinator's
// form, each partition once; never nil.
func fetchTopics[T any](topics []T, fields func(T) (string, []int32)) []group.TopicPartitions {
	name := func(t T) string { n, _ := fields(t); return n }
	ds, _ := distinctPartitions(topics, func(t T) topicKey { return topicByName(name(t)) },
		func(t T) []int32 { _, ps := fields(t); return ps }, func(p int32) int32 { return p })
	out := make([]group.TopicPartitions, 0, len(ds))
	for _, d := range ds {
		out = append(out, group.TopicPartitions{Topic: name(d.topic), Partitions: d.parts})
	}
	return out
}

func (b *Broker) handleListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if b.groups.Loading() {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	for _, l := range b.groups.ListGroups(req.StatesFilter) {
		if len(req.TypesFilter) > 0 && !containsFold(req.TypesFilter, l.Type) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = l.Group, l.ProtocolType, l.StateName, l.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// handleDescribeGroups describes classic groups. Each group is described
// once however often it is named; Kafka describes every copy (KafkaApis
// passes the list on as given), a group of many members being a large
// answer to a few bytes of request.
func (b *Broker) handleDescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	idx, _ := distinct(req.Groups, identity)
	for _, i := range idx {
		id := req.Groups[i]
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648 // not computed: no ACLs
		d, err := b.groups.DescribeGroup(id)
		switch {
		case errors.Is(err, kerr.GroupIDNotFound):
			// Before v6 a missing group is described as Dead, no error.
			rg.State = group.Dead.String()
			if req.Version >= 6 {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				rg.ErrorMessage = ptr(fmt.Sprintf("group %s not found", id))
			}
		case err != nil:
			rg.ErrorCode = kcode(err)
		default:
			rg.State, rg.ProtocolType, rg.Protocol = d.StateName, d.ProtocolType, d.Protocol
			for _, m := range d.Members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
				rm.ProtocolMetadata, rm.MemberAssignment = orEmpty(m.Metadata), orEmpty(m.Assignment)
				if m.InstanceID != "" {
					rm.InstanceID = ptr(m.InstanceID)
				}
				rg.Members = append(rg.Members, rm)
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// handleDeleteGroups deletes empty groups, each once however often it is
// named, as Kafka (KafkaApis.handleDeleteGroupsRequest takes the distinct
// names).
func (b *Broker) handleDeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	idx, _ := distinct(req.Groups, identity)
	ids := make([]string, len(idx))
	for j, i := range idx {
		ids[j] = req.Groups[i]
	}
	errs := b.groups.DeleteGroups(ctx, ids)
	for i, id := range ids {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, kcode(errs[i])
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// handleOffsetDelete deletes a group's committed offsets, each partition
// once however often it is named: Kafka's coordinator answers from a map
// by partition.
func (b *Broker) handleOffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	topics := fetchTopics(req.Topics, func(t kmsg.OffsetDeleteRequestTopic) (string, []int32) {
		ps := make([]int32, len(t.Partitions))
		for i, p := range t.Partitions {
			ps[i] = p.Partition
		}
		return t.Topic, ps
	})
	errs, err := b.groups.DeleteOffsets(ctx, req.Group, topics)
	if err != nil {
		resp.ErrorCode = kcode(err)
		return resp, nil
	}
	img := b.meta.Image()
	for i, t := range topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kcode(errs[i][j])
			if _, ok := img.Partition(t.Topic, p); !ok && rp.ErrorCode == 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
