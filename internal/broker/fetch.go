package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/storage"
)

// defaultFetchMaxBytes is Kafka's fetch.max.bytes default: the most one
// fetch response carries (beyond a first batch that is larger), whatever
// the client asks, so that one request cannot make the broker buffer GiBs.
const defaultFetchMaxBytes = 57671680

// fetchMaxBytes is fetch.max.bytes from the configuration.
func (b *Broker) fetchMaxBytes() int64 {
	if b.opts.Config == nil || b.opts.Config.FetchMaxBytes <= 0 {
		return defaultFetchMaxBytes
	}
	return b.opts.Config.FetchMaxBytes
}

// Kafka's request names of a fetch from a follower and from a consumer
// (its RequestMetrics.followFetchMetricName, consumerFetchMetricName).
const (
	fetchFollowerName = "FetchFollower"
	fetchConsumerName = "FetchConsumer"
)

// fetchReplicaID is the broker id a fetch claims to come from: Fetch v0-14
// carry it as ReplicaID, v15+ in ReplicaState (KIP-903); -1 for consumers.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// handleFetch serves consumers and followers.
//
// Version notes: v4+ only (record batch v2). v7+ fetch sessions (KIP-227)
// are declined by answering session id 0, so clients send full fetches.
// v11 rack id is ignored (consumers read from leaders only). v12+ tagged
// fields and diverging epochs: followers truncate through
// OffsetForLeaderEpoch instead, so LastFetchedEpoch is not checked. v13+
// topic ids. v15+ ReplicaState. v16+ NOT_LEADER_OR_FOLLOWER carries the
// current leader and its endpoint (KIP-951).
//
// Consumers read up to the high watermark, followers up to the log end;
// a follower's fetch offset tells the leader how far it has copied. As in
// Kafka, a partition named twice is served once (a later entry's limits
// win, the first one's position stays). The response is bounded by the
// request's and the broker's max bytes (the first batch is returned even
// when larger), and long-polls until min bytes arrive or max wait passes,
// on one waiter registered with every partition read.
//
// The request metrics count a fetch also as FetchFollower or
// FetchConsumer, as Kafka does, by the replica id it carries (a broker's
// id, or -1): known here from the decoded request, so nothing reads the
// body again.
func (b *Broker) handleFetch(ctx context.Context, rc *server.RequestContext, req *kmsg.FetchRequest) (kmsg.Response, error) {
	if fetchReplicaID(req) >= 0 {
		rc.SetSubname(fetchFollowerName)
	} else {
		rc.SetSubname(fetchConsumerName)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	dedupeFetch(req)
	f := fetchState{b: b, req: req, resp: resp, replicaID: fetchReplicaID(req), waiter: replica.NewWaiter()}
	defer f.waiter.Done()
	f.out = &fetchResponse{FetchResponse: resp}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	caughtUp := false
	for {
		total, failed := f.fill()
		if failed && !caughtUp && maybeLate(resp) {
			// Told that this broker does not lead, or about a newer
			// leader epoch than it knows: it may be late with the
			// metadata (catchup.go). Once caught up, read again.
			caughtUp = true
			if b.catchUp(ctx) {
				// Register again: a partition may be here now.
				f.filled = false
				continue
			}
		}
		if total >= int64(req.MinBytes) || failed || req.MaxWaitMillis <= 0 || f.watched == 0 {
			break
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		if !f.wait(ctx, remaining) {
			// Timed out or cancelled: answer with what we have (nothing new).
			break
		}
	}
	b.addLeaderEndpoints(resp, f.leaderHints)
	b.countFetched(&f)
	if len(f.out.regions) == 0 {
		return resp, nil
	}
	// The server sends the pinned record sets and releases them.
	return f.out, nil
}

// maybeLate reports whether an answer says the partition is led
// elsewhere, or that the requester knows a newer leader epoch: the
// answers a broker behind on the metadata gives.
func maybeLate(resp *kmsg.FetchResponse) bool {
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if sp.ErrorCode == kerr.NotLeaderForPartition.Code || sp.ErrorCode == kerr.UnknownLeaderEpoch.Code {
				return true
			}
		}
	}
	return false
}

// dedupeFetch makes the request's partition lists sets, the way Kafka
// reads them into a map: a partition named again keeps its first
// position and takes the later entry's fetch offset and limits.
func dedupeFetch(req *kmsg.FetchRequest) {
	type key struct {
		topic string
		id    [16]byte
	}
	topics := map[key]int{}
	out := req.Topics[:0]
	for _, rt := range req.Topics {
		k := key{rt.Topic, rt.TopicID}
		if req.Version < 13 {
			k.id = [16]byte{}
		} else {
			k.topic = ""
		}
		if i, ok := topics[k]; ok {
			out[i].Partitions = append(out[i].Partitions, rt.Partitions...)
			continue
		}
		topics[k] = len(out)
		out = append(out, rt)
	}
	req.Topics = out
	for i := range req.Topics {
		parts := req.Topics[i].Partitions
		at := map[int32]int{}
		kept := parts[:0:0]
		for _, rp := range parts {
			if j, ok := at[rp.Partition]; ok {
				kept[j] = rp
				continue
			}
			at[rp.Partition] = len(kept)
			kept = append(kept, rp)
		}
		req.Topics[i].Partitions = kept
	}
}

// fetchState is one fetch request being served.
type fetchState struct {
	b         *Broker
	req       *kmsg.FetchRequest
	resp      *kmsg.FetchResponse
	replicaID int32
	waiter    *replica.Waiter
	watched   int  // registrations of the waiter (0: none)
	filled    bool // the first fill (which registers the waiter) ran
	// leaderHints are the leaders named in NOT_LEADER_OR_FOLLOWER answers.
	leaderHints map[int32]bool
	// out is resp with the record sets read so far, pinned in their files.
	out *fetchResponse
}

// wait sleeps until a watched partition changes (true), or the timeout or
// ctx ends (false).
func (f *fetchState) wait(ctx context.Context, timeout time.Duration) bool {
	f.b.waitingFetches.Add(1)
	defer f.b.waitingFetches.Add(-1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	return f.waiter.Wait(ctx, timer.C)
}

// fill (re)builds the response topics. It returns the bytes gathered and
// whether any partition failed (errors are answered at once, without
// waiting).
func (f *fetchState) fill() (int64, bool) {
	req, resp := f.req, f.resp
	resp.Topics = resp.Topics[:0]
	f.out.release() // a fill after a wait reads everything again
	clear(f.leaderHints)
	img := f.b.meta.Image()
	var (
		total  int64
		failed bool
	)
	// As in Kafka, the response is bounded by the broker's fetch.max.bytes
	// too, and a MaxBytes of 0 still yields the first batch (see
	// readPartition): only v0-2 have no response limit.
	maxBytes := min(int64(req.MaxBytes), f.b.fetchMaxBytes())
	if req.Version < 3 {
		maxBytes = 1 << 62
	}
	register := !f.filled
	f.filled = true
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		topic, topicErr := lookupTopic(img, req.Version >= 13, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Empty, not null: librdkafka rejects a null record set.
			sp.RecordBatches = []byte{}
			if topicErr != nil {
				sp.ErrorCode = topicErr.Code
				failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			tp := storage.TopicPartition{Topic: topic.Name, Partition: rp.Partition}
			p := f.b.replicas.Get(tp)
			if p == nil {
				sp.ErrorCode = f.b.missingPartitionCode(tp)
				f.hintLeader(img, tp, &sp)
				failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if register {
				// Registered before reading: a change after the read
				// wakes the wait below.
				ev := replica.HighWatermark
				if f.replicaID >= 0 {
					ev = replica.LogEnd | replica.HighWatermark
				}
				f.waiter.Watch(p, ev)
				f.watched++
			}
			limit := int64(rp.PartitionMaxBytes)
			if left := maxBytes - total; left < limit {
				limit = left
			}
			at := regionAt{topic: len(resp.Topics), partition: len(st.Partitions)}
			n, err := f.readPartition(img, p, rp, limit, total == 0, &sp, at)
			if err != nil {
				sp.ErrorCode = errorCode(err)
				if errors.Is(err, replica.ErrNotLeader) {
					f.hintLeader(img, tp, &sp)
				}
				failed = true
			}
			total += n
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return total, failed
}

// readPartition reads one partition into sp and returns the bytes read.
// When the response already holds data, a first batch larger than the
// limit is left for the next fetch rather than overshooting.
func (f *fetchState) readPartition(img *metadata.Image, p *replica.Partition, rp kmsg.FetchRequestTopicPartition, limit int64, first bool, sp *kmsg.FetchResponseTopicPartition, at regionAt) (int64, error) {
	if limit <= 0 && !first && f.replicaID < 0 {
		if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
			return 0, err
		}
		o := p.Offsets()
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWater, o.HighWater, o.LogStart
		return 0, nil
	}
	limit = max(limit, 1)
	var (
		res storage.ReadResult
		o   replica.Offsets
		err error
	)
	if f.replicaID >= 0 {
		if !f.b.isReplica(img, p.TopicPartition(), f.replicaID) {
			// Only a replica's own broker may move the leader's view of
			// its progress (and so the HW); see CVE-2018-1288.
			return 0, replica.ErrNotReplica
		}
		res, o, err = p.ReadForFollower(replica.FollowerFetch{
			ReplicaID:          f.replicaID,
			CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
			FetchOffset:        rp.FetchOffset,
			LogStartOffset:     rp.LogStartOffset,
			MaxBytes:           int(min(limit, 1<<31-1)),
			CannotWrite:        rp.PartitionMaxBytes == 0,
		})
	} else {
		if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
			return 0, err
		}
		res, o, err = p.ReadForConsumer(rp.FetchOffset, int(min(limit, 1<<31-1)))
		if errors.Is(err, storage.ErrOffsetOutOfRange) && rp.FetchOffset > o.LogEnd && f.b.mayBeStale() {
			// The consumer read that offset from a later leader; this
			// one was fenced and does not know it yet. OFFSET_OUT_OF_RANGE
			// would make the consumer reset its position.
			err = fmt.Errorf("%w: offset %d beyond log end %d, and no heartbeat got through for the session timeout: this leader may be stale", replica.ErrNotLeader, rp.FetchOffset, o.LogEnd)
		}
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWater, o.HighWater, o.LogStart
	if err != nil {
		return 0, err
	}
	if res.Len == 0 || (!first && res.Len > limit) {
		return 0, nil
	}
	// Pinned, not read: the server sends it from the file (or copies it)
	// when it writes the response, and the segment's descriptor stays
	// open until then whatever retention or the file cache do. Past the
	// pin budget (storage bounds pinned descriptors) it is read now.
	region, pinned, err := res.TryPin()
	if err == nil && !pinned {
		sp.RecordBatches, err = res.Bytes()
	}
	if err != nil {
		tp := p.TopicPartition()
		f.b.log.Error("fetch read failed", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)), slog.Any("err", err))
		return 0, err
	}
	if !pinned {
		return int64(len(sp.RecordBatches)), nil
	}
	at.region = region
	f.out.regions = append(f.out.regions, at)
	return region.Size(), nil
}

// hintLeader fills CurrentLeader in a NOT_LEADER_OR_FOLLOWER answer
// (KIP-951) so the client can move without a metadata round trip.
func (f *fetchState) hintLeader(img *metadata.Image, tp storage.TopicPartition, sp *kmsg.FetchResponseTopicPartition) {
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		return
	}
	part, ok := img.Partition(tp.Topic, tp.Partition)
	if !ok || part.Leader < 0 || part.Leader == f.b.nodeID {
		// Naming itself (a stale leader's image) would send the client
		// straight back.
		return
	}
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = part.Leader, part.LeaderEpoch
	if f.leaderHints == nil {
		f.leaderHints = map[int32]bool{}
	}
	f.leaderHints[part.Leader] = true
}

// addLeaderEndpoints lists the endpoints of the leaders named in
// CurrentLeader fields (Fetch v16+, KIP-951).
func (b *Broker) addLeaderEndpoints(resp *kmsg.FetchResponse, leaders map[int32]bool) {
	if resp.Version < 16 || len(leaders) == 0 {
		return
	}
	img := b.meta.Image()
	ids := make([]int32, 0, len(leaders))
	for id := range leaders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		br, ok := img.Broker(id)
		if !ok {
			continue
		}
		ep := kmsg.NewFetchResponseBroker()
		ep.NodeID, ep.Host, ep.Port = br.ID, br.Host, br.Port
		if br.Rack != "" {
			rack := br.Rack
			ep.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, ep)
	}
}

// isReplica reports whether broker id holds a replica of tp.
func (b *Broker) isReplica(img *metadata.Image, tp storage.TopicPartition, id int32) bool {
	part, ok := img.Partition(tp.Topic, tp.Partition)
	return ok && slices.Contains(part.Replicas, id)
}
