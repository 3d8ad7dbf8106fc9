package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// ackWait is a partition of an acks=-1 produce waiting for its batch to
// commit.
type ackWait struct {
	p     *replica.Partition
	sp    *kmsg.ProduceResponseTopicPartition // its answer in the response
	epoch int32
	last  int64
	// handOver: nothing was appended (a storage error, already in sp);
	// the leader is handing the partition over, and the wait is for
	// that, at most handOverWait, to answer NOT_LEADER_OR_FOLLOWER
	// naming the new leader instead.
	handOver bool
}

// handOverWait bounds a produce's wait for its leader's hand-over (a
// storage error): the controller usually decides in milliseconds; past
// this the storage error is answered, which clients retry too.
const handOverWait = 2 * time.Second

// pendingAppend is a partition's batches that passed the checks, to be
// appended once the response's skeleton is built.
type pendingAppend struct {
	topic   string
	rp      kmsg.ProduceRequestTopicPartition
	checked recordbatch.Checked // what the server validated as it arrived
	ti, pi  int                 // its answer: resp.Topics[ti].Partitions[pi]
}

// parallelAppendBytes is the size of a Produce request from which its
// partitions are appended in parallel. Below it a goroutine's start and
// wake-up cost more than the copy they would overlap.
const parallelAppendBytes = 256 << 10

// appendAll appends every pending partition and returns the acks=-1
// waits. A request carrying enough bytes for several partitions is
// appended by up to GOMAXPROCS goroutines at once: a client with one
// request in flight per broker (Kafka clients without idempotence) waits
// for the whole request, and appends to different partitions share
// nothing but the disk. Within a partition nothing changes: a request is
// handled whole before its connection's next one, so per-partition
// order holds.
func (b *Broker) appendAll(resp *kmsg.ProduceResponse, jobs []pendingAppend, acks int16) []ackWait {
	// One slice: a partition with nothing to wait for keeps a nil sp and
	// is dropped below.
	waits := make([]ackWait, len(jobs))
	run := func(i int) {
		j := jobs[i]
		sp := &resp.Topics[j.ti].Partitions[j.pi]
		if w, ok := b.produceOne(j.topic, j.rp, j.checked, acks, sp); ok {
			w.sp = sp
			waits[i] = w
		}
	}
	total := 0
	for _, j := range jobs {
		total += len(j.rp.Records)
	}
	if workers := min(len(jobs), runtime.GOMAXPROCS(0)); workers < 2 || total < parallelAppendBytes {
		for i := range jobs {
			run(i)
		}
	} else {
		var next atomic.Int64
		work := func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				run(i)
			}
		}
		var wg sync.WaitGroup
		for range workers - 1 {
			wg.Go(work)
		}
		work()
		wg.Wait()
	}
	out := waits[:0]
	for _, w := range waits {
		if w.sp != nil {
			out = append(out, w)
		}
	}
	return out
}

// ProduceMayWait advises the server whether a Produce may wait
// (server.ProduceWaitAdvisor): an acks=-1 one only if a partition it
// names is led here with another broker in its ISR; one at any acks if a
// partition it names has a log that refuses writes, as the failed append
// waits for the hand-over (handOverWait). Every other case is answered at
// the append: a partition alone in its ISR commits there, and one
// unknown or refused fails at once. One not led here waits at most for
// this broker to catch up with the metadata (catchup.go), usually
// milliseconds, which the reader may spend.
func (b *Broker) ProduceMayWait(req *kmsg.ProduceRequest) bool {
	img := b.meta.Image()
	for _, rt := range req.Topics {
		topic, err := lookupTopic(img, req.Version >= 13, rt.Topic, rt.TopicID)
		if err != nil {
			continue
		}
		for _, rp := range rt.Partitions {
			p := b.replicas.Get(storage.TopicPartition{Topic: topic.Name, Partition: rp.Partition})
			if p != nil && (p.WritesRefused() || req.Acks == -1 && p.AcksAllMayWait()) {
				return true
			}
		}
	}
	return false
}

// handleProduce appends each partition's batches on the local leader.
// acks=0 gets no response; acks=1 is answered after the leader's append;
// acks=-1 once the high watermark has passed every partition's batch, or
// at the request's timeout (REQUEST_TIMED_OUT for the partitions still
// waiting), waiting on one waiter for all of them.
//
// A partition named more than once is refused, every copy, with
// INVALID_REQUEST, and nothing is appended to it. Kafka keeps the
// partitions in a map instead (KafkaApis.handleProduceRequest): the last
// copy is appended and answered, the others are dropped without a word,
// which has lost records of real clients (apache/kafka#22662). Refusing
// them all, as Kafka's ListOffsets does, tells the client.
func (b *Broker) handleProduce(ctx context.Context, rc *server.RequestContext, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var appends []pendingAppend
	acksValid := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	produceTopic := func(rt kmsg.ProduceRequestTopic) topicKey {
		if req.Version >= 13 {
			return topicKey{byID: true, id: rt.TopicID}
		}
		return topicByName(rt.Topic)
	}
	_, dups := distinctPartitions(req.Topics, produceTopic,
		func(rt kmsg.ProduceRequestTopic) []kmsg.ProduceRequestTopicPartition { return rt.Partitions },
		func(rp kmsg.ProduceRequestTopicPartition) int32 { return rp.Partition })
	img := b.meta.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		topic, topicErr := lookupTopic(img, req.Version >= 13, rt.Topic, rt.TopicID)
		if topic != nil {
			st.Topic = topic.Name
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			switch {
			case !acksValid:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case dups[partitionKey{produceTopic(rt), rp.Partition}]:
				sp.ErrorCode, sp.ErrorMessage = kerr.InvalidRequest.Code, ptr("The partition is named more than once in the request.")
			case topicErr != nil:
				sp.ErrorCode = topicErr.Code
			case isInternalTopic(topic.Name):
				// As in Kafka: only the coordinators write their topics;
				// a client batch would be replayed as group state.
				msg := "Cannot append to internal topic " + topic.Name
				sp.ErrorCode, sp.ErrorMessage = kerr.InvalidTopicException.Code, &msg
			default:
				records, kerrCode, msg := checkProduceRecords(req.Version, rp.Records)
				if kerrCode != nil {
					sp.ErrorCode, sp.ErrorMessage = kerrCode.Code, &msg
					break
				}
				rp.Records = records
				// Located by index: the slices still grow.
				appends = append(appends, pendingAppend{topic: topic.Name, rp: rp, checked: rc.CheckedRecords(records),
					ti: len(resp.Topics), pi: len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if req.Version >= 13 {
			st.Topic = ""
		}
		resp.Topics = append(resp.Topics, st)
	}
	waits := b.appendAll(resp, appends, req.Acks)
	if late := notLedYet(resp, appends); len(late) > 0 && b.catchUp(ctx) {
		// Caught up with the metadata committed before: the partitions
		// this broker leads now are taken, the others refused for good.
		for _, j := range late {
			sp := &resp.Topics[j.ti].Partitions[j.pi]
			sp.ErrorCode, sp.ErrorMessage = 0, nil
		}
		waits = append(waits, b.appendAll(resp, late, req.Acks)...)
	}
	if len(waits) > 0 {
		// The batches are in the log: their bytes are not needed while
		// waiting for the followers, whose fetches must not wait for
		// this memory.
		if rc != nil && rc.ReleaseRequest != nil {
			rc.ReleaseRequest()
		}
		b.waitingProduces.Add(1)
		b.awaitAcks(ctx, waits, time.Duration(req.TimeoutMillis)*time.Millisecond)
		b.waitingProduces.Add(-1)
	}
	if req.Acks == 0 {
		// The client expects no answer, so, like Kafka, close the
		// connection to tell it that something failed: it then refreshes
		// its metadata instead of producing into the void.
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					return nil, fmt.Errorf("acks=0 produce to %s-%d failed: %w",
						st.Topic, sp.Partition, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
		}
		return nil, nil
	}
	b.hintProduceLeaders(resp)
	return resp, nil
}

// notLedYet returns the appends refused NOT_LEADER_OR_FOLLOWER; nothing
// of them was appended, so they may be tried again.
func notLedYet(resp *kmsg.ProduceResponse, appends []pendingAppend) []pendingAppend {
	var late []pendingAppend
	for _, j := range appends {
		if resp.Topics[j.ti].Partitions[j.pi].ErrorCode == kerr.NotLeaderForPartition.Code {
			late = append(late, j)
		}
	}
	return late
}

// hintProduceLeaders fills CurrentLeader in NOT_LEADER_OR_FOLLOWER answers
// and lists those leaders' endpoints (Produce v10+, KIP-951), so that the
// producer moves to the new leader without a metadata round trip.
func (b *Broker) hintProduceLeaders(resp *kmsg.ProduceResponse) {
	if resp.Version < 10 {
		return
	}
	img := b.meta.Image()
	leaders := map[int32]bool{}
	for ti := range resp.Topics {
		st := &resp.Topics[ti]
		t := img.TopicByName(st.Topic)
		if st.Topic == "" {
			t = img.TopicByID(st.TopicID)
		}
		if t == nil {
			continue
		}
		for pi := range st.Partitions {
			sp := &st.Partitions[pi]
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.Partition < 0 || int(sp.Partition) >= len(t.Partitions) {
				continue
			}
			if p := t.Partitions[sp.Partition]; p.Leader >= 0 && p.Leader != b.nodeID {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = p.Leader, p.LeaderEpoch
				leaders[p.Leader] = true
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(leaders)) {
		br, ok := img.Broker(id)
		if !ok {
			continue
		}
		ep := kmsg.NewProduceResponseBroker()
		ep.NodeID, ep.Host, ep.Port = br.ID, br.Host, br.Port
		if br.Rack != "" {
			rack := br.Rack
			ep.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, ep)
	}
}

// isInternalTopic names the topics Kafka reserves for its coordinators.
func isInternalTopic(name string) bool {
	return name == offsetsTopic || name == "__transaction_state"
}

// produceOne appends one partition's batches; for acks=-1 it returns the
// wait for their commit (ok=true).
func (b *Broker) produceOne(topic string, rp kmsg.ProduceRequestTopicPartition, checked recordbatch.Checked, acks int16, sp *kmsg.ProduceResponseTopicPartition) (ackWait, bool) {
	tp := storage.TopicPartition{Topic: topic, Partition: rp.Partition}
	p := b.replicas.Get(tp)
	if p == nil {
		sp.ErrorCode = b.missingPartitionCode(tp)
		return ackWait{}, false
	}
	info, err := p.AppendCheckedAsLeader(rp.Records, checked, acks)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		msg := err.Error()
		sp.ErrorMessage = &msg
		if sp.ErrorCode == kerr.UnknownServerError.Code || sp.ErrorCode == kerr.KafkaStorageError.Code {
			b.log.Error("produce failed", slog.String("topic", topic), slog.Int("partition", int(rp.Partition)), slog.Any("err", err))
		} else {
			b.log.Debug("produce rejected", slog.String("topic", topic), slog.Int("partition", int(rp.Partition)), slog.Any("err", err))
		}
		// The producer is better sent to the new leader than told to
		// retry here: franz-go refreshes its metadata before retrying a
		// storage error, seconds later, but follows a KIP-951 hint at
		// once. acks=0 has no answer to improve.
		if acks != 0 && errors.Is(err, replica.ErrHandingOver) {
			return ackWait{p: p, epoch: info.LeaderEpoch, handOver: true}, true
		}
		return ackWait{}, false
	}
	b.events().Produced(topic, int64(len(rp.Records)), info.NumRecords)
	sp.BaseOffset = info.FirstOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = info.LogStartOffset
	if acks != -1 {
		return ackWait{}, false
	}
	return ackWait{p: p, epoch: info.LeaderEpoch, last: info.LastOffset}, true
}

// awaitAcks waits until every batch is committed or can no longer be, or
// the timeout passes, and sets each partition's error accordingly. A
// partition that failed after its append keeps its offsets out of the
// answer, as Kafka does.
func (b *Broker) awaitAcks(ctx context.Context, waits []ackWait, timeout time.Duration) {
	fail := func(a ackWait, err error) {
		a.sp.ErrorCode = errorCode(err)
		a.sp.ErrorMessage = errorMessage(err)
		a.sp.BaseOffset, a.sp.LogAppendTime = -1, -1
	}
	start := time.Now()
	deadline := func(a ackWait) time.Time {
		if a.handOver {
			return start.Add(min(timeout, handOverWait))
		}
		return start.Add(timeout)
	}
	// settle answers the partitions whose batches are committed (or can
	// no longer be), whose leader handed over, or whose time is up, and
	// keeps the others.
	settle := func(waits []ackWait, now time.Time) []ackWait {
		open := waits[:0]
		for _, a := range waits {
			if a.handOver {
				switch {
				case !a.p.Leads(a.epoch):
					fail(a, fmt.Errorf("%w: handed over after a storage error", replica.ErrNotLeader))
				case now.Before(deadline(a)):
					open = append(open, a)
				} // else the storage error stays the answer
				continue
			}
			done, err := a.p.AckState(a.epoch, a.last)
			switch {
			case done && err != nil:
				fail(a, err)
			case done:
			case now.Before(deadline(a)):
				open = append(open, a)
			default:
				fail(a, fmt.Errorf("%w: batch at %d not replicated to the in-sync replicas within %v", kerr.RequestTimedOut, a.last, timeout))
			}
		}
		return open
	}
	// A leader alone in its ISR committed at its append: answer without
	// registering a waiter (or arming a timer) for nothing.
	if waits = settle(waits, time.Now()); len(waits) == 0 {
		return
	}
	w := replica.NewWaiter()
	defer w.Done()
	for _, a := range waits {
		w.Watch(a.p, replica.HighWatermark)
	}
	next := func() time.Duration {
		first := deadline(waits[0])
		for _, a := range waits[1:] {
			if d := deadline(a); d.Before(first) {
				first = d
			}
		}
		return time.Until(first)
	}
	timer := time.NewTimer(next())
	defer timer.Stop()
	for {
		// Checked again after Watch: a commit in between is not missed.
		if waits = settle(waits, time.Now()); len(waits) == 0 {
			return
		}
		if w.Wait(ctx, timer.C) {
			continue
		}
		if ctx.Err() != nil {
			for _, a := range waits {
				fail(a, fmt.Errorf("%w: batch at %d: %w", kerr.RequestTimedOut, a.last, ctx.Err()))
			}
			return
		}
		// A deadline passed (settle answers it); wait for the next.
		if waits = settle(waits, time.Now()); len(waits) == 0 {
			return
		}
		timer.Reset(next())
	}
}
