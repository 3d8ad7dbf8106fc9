package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDTimeout bounds one wait for a block of producer ids (a Raft
// commit), well inside clients' request timeouts.
const producerIDTimeout = 10 * time.Second

// handleInitProducerID hands an idempotent producer a fresh producer id
// with epoch 0. Like Kafka, a request without a transactional id gets a new
// id even when it names its current id and epoch (KIP-360, v3+): an
// idempotent producer's state lives on the partitions, which accept a new
// producer at any sequence, so a new id is always a safe "bump".
//
// Transactions are not built yet. A transactional request is answered
// COORDINATOR_NOT_AVAILABLE, what Kafka answers while no transaction
// coordinator is available: clients retry and then fail with that error
// named, rather than being told a transaction began.
func (b *Broker) handleInitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		b.log.Warn("transactional InitProducerId refused: transactions are not supported yet",
			slog.String("transactional.id", *req.TransactionalID))
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, producerIDTimeout)
	defer cancel()
	id, err := b.producerIDs.Next(ctx)
	if err != nil {
		// Kafka's broker answers COORDINATOR_LOAD_IN_PROGRESS while it
		// waits for a block of ids; clients retry it.
		b.log.Warn("no producer id to hand out", slog.Any("err", err))
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// expireProducers runs until ctx ends: every check interval it drops
// producer state silent for producer.id.expiration.ms and the snapshots of
// deleted segments, on every hosted partition. The first pass runs at
// once, which also expires producers that were loaded from snapshots.
func (b *Broker) expireProducers(ctx context.Context) {
	ttl := 24 * time.Hour
	if c := b.opts.Config; c != nil && c.ProducerIDExpirationMs > 0 {
		ttl = time.Duration(c.ProducerIDExpirationMs) * time.Millisecond
	}
	// Kafka's producer.id.expiration.check.interval.ms defaults to 10
	// minutes; a shorter expiration is checked as often as it can bite.
	interval := min(10*time.Minute, ttl)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		expired := 0
		for _, tp := range b.replicas.Partitions() {
			p := b.replicas.Get(tp)
			if p == nil {
				continue
			}
			n, err := p.MaintainProducers(time.Now(), ttl)
			expired += n
			if err != nil {
				b.log.Warn("producer state maintenance", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)), slog.Any("err", err))
			}
		}
		if expired > 0 {
			b.log.Info("expired idle producers", slog.Int("count", expired), slog.Duration("producer.id.expiration", ttl))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
