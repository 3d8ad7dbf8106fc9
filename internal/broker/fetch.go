package broker

import (
	"context"
	"log/slog"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
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

// handleFetch serves consumers: reads up to the high watermark, honouring
// the per-partition and whole-response byte limits (the first batch is
// returned even when larger), and long-polls until min bytes arrive or
// max wait passes. Fetch sessions (KIP-227) are declined by answering
// session id 0, so clients send full fetches every time.
func (b *Broker) handleFetch(ctx context.Context, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	if req.ReplicaID >= 0 || req.ReplicaState.ID >= 0 {
		// Follower fetching arrives with replication; until then no broker
		// fetches from us as a replica.
		resp.ErrorCode = kerr.NotLeaderForPartition.Code
		return resp, nil
	}
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		waitOn, total, failed := b.fillFetch(req, resp)
		if total >= int64(req.MinBytes) || failed || req.MaxWaitMillis <= 0 || len(waitOn) == 0 {
			return resp, nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return resp, nil
		}
		if !waitAny(ctx, waitOn, remaining) {
			// Timed out or cancelled: answer with what we have (nothing new).
			return resp, nil
		}
	}
}

// fillFetch (re)builds the response topics. It returns the change signals
// of the partitions read, the bytes gathered, and whether any partition
// failed (errors are answered at once, without waiting).
func (b *Broker) fillFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) ([]<-chan struct{}, int64, bool) {
	resp.Topics = resp.Topics[:0]
	img := b.meta.Image()
	var (
		waitOn []<-chan struct{}
		total  int64
		failed bool
	)
	// As in Kafka, the response is bounded by the broker's fetch.max.bytes
	// too, and a MaxBytes of 0 still yields the first batch (see
	// fetchPartition): only v0-2 have no response limit.
	maxBytes := min(int64(req.MaxBytes), b.fetchMaxBytes())
	if req.Version < 3 {
		maxBytes = 1 << 62
	}
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
			p := b.replicas.Get(tp)
			if p == nil {
				sp.ErrorCode = b.missingPartitionCode(tp)
				failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			waitOn = append(waitOn, p.Changed())
			limit := int64(rp.PartitionMaxBytes)
			if left := maxBytes - total; left < limit {
				limit = left
			}
			n, err := b.fetchPartition(p, rp, limit, total == 0, &sp)
			if err != nil {
				sp.ErrorCode = errorCode(err)
				failed = true
			}
			total += n
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return waitOn, total, failed
}

// fetchPartition reads one partition into sp and returns the bytes read.
// When the response already holds data, a first batch larger than the
// limit is left for the next fetch rather than overshooting.
func (b *Broker) fetchPartition(p *replica.Partition, rp kmsg.FetchRequestTopicPartition, limit int64, first bool, sp *kmsg.FetchResponseTopicPartition) (int64, error) {
	if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
		return 0, err
	}
	if limit <= 0 && !first {
		o := p.Offsets()
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWater, o.HighWater, o.LogStart
		return 0, nil
	}
	if limit < 1 {
		limit = 1
	}
	res, o, err := p.ReadForConsumer(rp.FetchOffset, int(min(limit, 1<<31-1)))
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWater, o.HighWater, o.LogStart
	if err != nil {
		return 0, err
	}
	if res.Len == 0 || (!first && res.Len > limit) {
		return 0, nil
	}
	data, err := res.Bytes()
	if err != nil {
		b.log.Error("fetch read failed", slog.String("topic", p.TopicPartition().Topic), slog.Int("partition", int(rp.Partition)), slog.Any("err", err))
		return 0, err
	}
	sp.RecordBatches = data
	return int64(len(data)), nil
}

// waitAny blocks until one of the channels closes (true), or the timeout
// or ctx ends (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}
