package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/waitclock"
)

// The broker's side of the cluster: what it sends the active controller
// (ISR changes, producer id blocks, forwarded admin requests) and where it
// finds other brokers.

// isrBatcher implements replica.ISRChanger: proposals queue up and one
// goroutine sends them to the controller in AlterPartition requests, one
// in flight at a time, as Kafka's AlterPartitionManager does. The outcome
// reaches the replica as a metadata update; a refusal or a failure to
// reach the controller clears the proposal so that it is made again.
type isrBatcher struct {
	b *Broker

	mu      sync.Mutex
	queued  map[storage.TopicPartition]isrProposal
	wake    chan struct{}
	started bool
}

type isrProposal struct {
	p *replica.Partition
	c replica.ISRChange
}

func newISRBatcher(b *Broker) *isrBatcher {
	return &isrBatcher{b: b, queued: map[storage.TopicPartition]isrProposal{}, wake: make(chan struct{}, 1)}
}

// AlterISR queues a proposal; it never blocks (the replica holds its lock).
func (q *isrBatcher) AlterISR(p *replica.Partition, c replica.ISRChange) {
	q.mu.Lock()
	q.queued[c.TopicPartition] = isrProposal{p: p, c: c}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// MayJoinISR implements replica.ISRChanger from this broker's image.
func (q *isrBatcher) MayJoinISR(id int32) bool {
	br, ok := q.b.meta.Image().Broker(id)
	return ok && br.Eligible()
}

// Alive implements replica.ISRChanger.
func (q *isrBatcher) Alive(id int32) bool {
	br, ok := q.b.meta.Image().Broker(id)
	return ok && !br.Fenced
}

// run sends queued proposals until ctx ends.
func (q *isrBatcher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		q.mu.Lock()
		batch := q.queued
		q.queued = map[storage.TopicPartition]isrProposal{}
		q.mu.Unlock()
		if len(batch) > 0 {
			q.send(ctx, batch)
		}
	}
}

// send sends one AlterPartition request for batch and clears every
// proposal the controller did not accept.
func (q *isrBatcher) send(ctx context.Context, batch map[storage.TopicPartition]isrProposal) {
	b := q.b
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = b.nodeID, b.lifecycle.Epoch()
	byTopic := map[[16]byte]int{}
	for _, pr := range batch {
		i, ok := byTopic[pr.c.TopicID]
		if !ok {
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic, rt.TopicID = pr.c.TopicPartition.Topic, pr.c.TopicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[pr.c.TopicID] = i
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = pr.c.TopicPartition.Partition, pr.c.LeaderEpoch, pr.c.PartitionEpoch
		rp.NewISR = pr.c.ISR
		for _, id := range pr.c.ISR {
			m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			m.BrokerID, m.BrokerEpoch = id, -1
			rp.NewEpochISR = append(rp.NewEpochISR, m)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := b.ctrl.Send(sctx, req)
	failAll := func(why error) {
		for _, pr := range batch {
			pr.p.ISRChangeFailed(pr.c.PartitionEpoch)
		}
		if ctx.Err() == nil {
			b.log.Warn("ISR change not made; will propose again", slog.Int("partitions", len(batch)), slog.Any("err", why))
		}
	}
	if err != nil {
		failAll(err)
		return
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		failAll(err)
		return
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			name := rt.Topic
			if t := b.meta.Image().TopicByID(rt.TopidID); t != nil {
				name = t.Name
			}
			pr, ok := batch[storage.TopicPartition{Topic: name, Partition: rp.Partition}]
			if !ok {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				pr.p.ISRChangeFailed(pr.c.PartitionEpoch)
				b.log.Info("ISR change refused", slog.String("topic", name), slog.Int("partition", int(rp.Partition)),
					slog.Any("isr", pr.c.ISR), slog.Any("err", err))
				continue
			}
			b.events().ISRChanged(pr.c.PreviousISR, len(rp.ISR))
			b.log.Info("ISR changed", slog.String("topic", name), slog.Int("partition", int(rp.Partition)),
				slog.Any("isr", rp.ISR), slog.Int("leader", int(rp.LeaderID)), slog.Int("partition.epoch", int(rp.PartitionEpoch)))
		}
	}
}

// shrinkISRs checks the ISRs of the partitions this broker leads every
// half replica.lag.time.max.ms, as Kafka's isr-expiration task does.
func (b *Broker) shrinkISRs(ctx context.Context) {
	t := time.NewTicker(max(b.opts.ReplicaLagMax/2, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range b.replicas.Leading() {
			p.MaybeShrinkISR()
		}
	}
}

// brokerAddr resolves a broker id to its inter-broker endpoint.
func (b *Broker) brokerAddr(id int32) (string, bool) {
	br, ok := b.meta.Image().Broker(id)
	if !ok {
		return "", false
	}
	host, port := br.Host, br.Port
	for _, ep := range br.Endpoints {
		if ep.Listener == b.opts.InterBrokerListener {
			host, port = ep.Host, ep.Port
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port))), true
}

// producerIDSource reserves producer id blocks: in the local Raft when
// this node is the active controller, else with AllocateProducerIds.
type producerIDSource struct{ b *Broker }

func (s producerIDSource) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	if s.b.meta.IsLeader() {
		return s.b.meta.AllocateProducerIDs(ctx, n)
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = s.b.nodeID, s.b.lifecycle.Epoch()
	resp, err := s.b.ctrl.Send(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("allocate producer ids: %w", err)
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, fmt.Errorf("allocate producer ids: %w", err)
	}
	if int64(r.ProducerIDLen) < n {
		// Our blocks are the controller's size; a smaller one still
		// holds ids never handed out, but the pool expects n.
		return 0, fmt.Errorf("allocate producer ids: controller gave %d ids, want %d", r.ProducerIDLen, n)
	}
	return r.ProducerIDStart, nil
}

// forward sends an admin request a client made to the active controller
// (Kafka forwards the same requests, KIP-590) and returns its answer.
func (b *Broker) forward(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	fctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// The round trip is the request's remote time, as Kafka counts a
	// forwarded request's wait for the controller.
	stop := waitclock.Start(ctx)
	resp, err := b.ctrl.Send(fctx, req)
	stop()
	if err != nil {
		return nil, fmt.Errorf("forward %s to the controller: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// waitImage waits until the local metadata image satisfies cond or ctx
// ends: a forwarded change is committed by the controller before it
// answers, and reaches this node's image a moment later.
func (b *Broker) waitImage(ctx context.Context, cond func(*metadata.Image) bool) bool {
	for {
		ch := b.meta.Changes()
		if cond(b.meta.Image()) {
			return true
		}
		// Waiting for the controller's change to arrive is remote time.
		stop := waitclock.Start(ctx)
		ended := false
		select {
		case <-ctx.Done():
			ended = true
		case <-ch:
		}
		stop()
		if ended {
			return false
		}
	}
}

// createTopicRemote creates a topic through the active controller and
// waits until this node's image shows it.
func (b *Broker) createTopicRemote(ctx context.Context, r metadata.CreateTopic) (*metadata.Topic, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60000
	req.ValidateOnly = r.ValidateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = r.Name, r.NumPartitions, r.ReplicationFactor
	for p, replicas := range r.Assignments {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range r.Configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := b.forward(ctx, req)
	if err != nil {
		return nil, err
	}
	st := resp.(*kmsg.CreateTopicsResponse).Topics
	if len(st) != 1 {
		return nil, fmt.Errorf("create topic %q: the controller answered %d topics", r.Name, len(st))
	}
	if err := kerr.ErrorForCode(st[0].ErrorCode); err != nil {
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil, fmt.Errorf("create topic %q: %w", r.Name, metadata.ErrTopicExists)
		}
		msg := ""
		if st[0].ErrorMessage != nil {
			msg = ": " + *st[0].ErrorMessage
		}
		return nil, fmt.Errorf("create topic %q: %w%s", r.Name, err, msg)
	}
	if r.ValidateOnly {
		return &metadata.Topic{Name: r.Name}, nil
	}
	var t *metadata.Topic
	if !b.waitImage(ctx, func(im *metadata.Image) bool {
		t = im.TopicByName(r.Name)
		return t != nil && (st[0].TopicID == [16]byte{} || t.ID == st[0].TopicID)
	}) {
		return nil, fmt.Errorf("create topic %q: created, but not yet in this broker's metadata: %w", r.Name, ctx.Err())
	}
	return t, nil
}
