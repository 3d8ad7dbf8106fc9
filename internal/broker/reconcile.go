package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

// A partition whose log cannot be opened (file descriptors exhausted, a
// directory in the way, a read-only disk) is retried with a backoff that
// doubles from reopenBackoffMin to reopenBackoffMax, so it comes up soon
// after the cause is gone without any metadata change to prompt it.
const (
	reopenBackoffMin = 100 * time.Millisecond
	reopenBackoffMax = 5 * time.Second
)

// watchMetadata brings local replicas in line with each new metadata
// image, and retries what failed until it succeeds.
func (b *Broker) watchMetadata(ctx context.Context) {
	var streak failureStreak
	for {
		changed := b.meta.Changes()
		var retry <-chan time.Time
		if failed := b.reconcile(); len(failed) > 0 {
			retry = time.After(streak.fail(b.log, failed))
		} else {
			streak.recover(b.log)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry:
		}
	}
}

// failureStreak tracks consecutive failed reconciliations: it logs once
// when they start and once when they end, not at every retry.
type failureStreak struct {
	retries int
	backoff time.Duration
	since   time.Time
}

// fail records a failed reconciliation and returns how long to wait.
func (s *failureStreak) fail(log *slog.Logger, failed map[storage.TopicPartition]error) time.Duration {
	if s.retries == 0 {
		s.since, s.backoff = time.Now(), reopenBackoffMin
		tps := slices.SortedFunc(maps.Keys(failed), compareTP)
		first := tps[0]
		log.Warn("cannot open or remove local partitions; retrying with backoff",
			slog.Int("partitions", len(tps)), slog.String("first", tpName(first)),
			slog.Any("err", failed[first]), slog.Duration("max.backoff", reopenBackoffMax))
	} else {
		s.backoff = min(2*s.backoff, reopenBackoffMax)
	}
	s.retries++
	return s.backoff
}

// recover ends a streak, if one is running.
func (s *failureStreak) recover(log *slog.Logger) {
	if s.retries > 0 {
		log.Info("local partitions in line with the metadata again",
			slog.Int("retries", s.retries), slog.Duration("after", time.Since(s.since).Round(time.Millisecond)))
	}
	*s = failureStreak{}
}

func compareTP(a, c storage.TopicPartition) int {
	if a.Topic != c.Topic {
		if a.Topic < c.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition - c.Partition)
}

func tpName(tp storage.TopicPartition) string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// reconcile brings the local replicas in line with the metadata image:
// it opens (or updates) a replica for every partition assigned to this
// broker, starts or stops following each one's leader as its role says,
// and deletes the logs of partitions that went away. Only what changed
// since the last image is looked at (metadata.DiffTopics), plus the
// partitions whose last attempt failed. The partitions of a pending topic
// are kept but not opened here: its creator opens them (openLocal), and a
// pending topic found any other way (after a crash) is about to be
// aborted. It returns the partitions it could not open or delete.
func (b *Broker) reconcile() map[storage.TopicPartition]error {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	img := b.meta.Image()
	if img == b.lastImage && len(b.retry) == 0 {
		return nil
	}
	// The throttle is a dynamic broker config: read it at every change.
	b.fetchers.SetReassignmentThrottle(b.config().ReplicaReassignmentThrottleBytesPerSec)
	failed := map[storage.TopicPartition]error{}
	var examine, removed []*metadata.Topic
	if b.lastImage == nil {
		examine = img.TopicsWithPending()
	} else {
		d := metadata.DiffTopics(b.lastImage, img)
		examine, removed = append(d.Added, d.Changed...), d.Removed
		if metadata.BrokerConfigsChanged(b.lastImage, img, b.nodeID) {
			// New broker-wide topic defaults: every topic may resolve
			// differently now.
			examine = img.TopicsWithPending()
		}
		seen := map[string]bool{}
		for _, t := range examine {
			seen[t.Name] = true
		}
		for tp := range b.retry {
			if t := img.TopicByNameWithPending(tp.Topic); t != nil && !seen[t.Name] {
				examine, seen[t.Name] = append(examine, t), true
			} else if t == nil {
				// Its topic is gone: remove what is left of it.
				if err := b.removeLocal(tp); err != nil {
					failed[tp] = err
				}
			}
		}
	}
	for _, t := range removed {
		for _, p := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
			if id, ok := b.replicas.StoredTopicID(tp); !ok || id != t.ID {
				continue // not ours, or already a newer incarnation's
			}
			if err := b.removeLocal(tp); err != nil {
				failed[tp] = err
			}
		}
	}
	var ensure []replicaWork
	for _, t := range examine {
		for _, p := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
			if !slices.Contains(p.Replicas, b.nodeID) {
				if b.replicas.Get(tp) != nil {
					// Moved away (reassignment): stop and delete.
					if err := b.removeLocal(tp); err != nil {
						failed[tp] = err
					}
				}
				continue
			}
			if t.Pending {
				continue
			}
			ensure = append(ensure, replicaWork{t, p})
		}
	}
	maps.Copy(failed, b.ensureReplicas(ensure))
	if b.lastImage != nil && metadata.AliveChanged(b.lastImage, img) {
		for _, p := range b.replicas.Leading() {
			p.BrokersChanged()
		}
	}
	if b.lastImage == nil {
		b.sweepUnknownLogs(img, failed)
	}
	b.lastImage = img
	if b.reconciled.Advance(int64(img.Index())) {
		// Report it now rather than at the next heartbeat: the
		// controller may be holding a CreateTopics answer for it, and
		// at start-up it unfences this broker once it has caught up.
		if l := b.pokes.Load(); l != nil {
			l.Poke()
		}
	}
	b.retry = map[storage.TopicPartition]bool{}
	for tp := range failed {
		b.retry[tp] = true
	}
	return failed
}

// sweepUnknownLogs, at start, deletes the logs of partitions the metadata
// no longer assigns here (deleted or moved while this broker was down).
func (b *Broker) sweepUnknownLogs(img *metadata.Image, failed map[storage.TopicPartition]error) {
	for _, tp := range b.logs.Partitions() {
		if t := img.TopicByNameWithPending(tp.Topic); t != nil && int(tp.Partition) < len(t.Partitions) &&
			slices.Contains(t.Partitions[tp.Partition].Replicas, b.nodeID) {
			continue
		}
		if _, ok := b.replicas.StoredTopicID(tp); !ok {
			// A log whose topic we cannot account for: keep the data and
			// say so (once), rather than delete what may not be ours.
			if !b.unknownLogs[tp] {
				b.unknownLogs[tp] = true
				b.log.Warn("log dir for unknown partition left in place", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)))
			}
			continue
		}
		if err := b.removeLocal(tp); err != nil {
			failed[tp] = err
		}
	}
}

// removeLocal stops following tp and deletes its local replica.
func (b *Broker) removeLocal(tp storage.TopicPartition) error {
	b.fetchers.Unfollow(tp)
	if b.replicas.Get(tp) == nil && b.logs.Get(tp) == nil {
		return nil
	}
	b.log.Info("deleting partition", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)))
	return b.replicas.Remove(tp)
}

// createTopic creates a topic through the controller, atomically: the
// topic stays pending (invisible to clients) until this broker has opened
// its local replicas, and is removed again if it cannot, so that a topic
// is either created and ready or not created at all. The caller can then
// answer with a ready leader.
func (b *Broker) createTopic(ctx context.Context, r metadata.CreateTopic) (*metadata.Topic, error) {
	if !b.meta.IsLeader() {
		// Auto-creation on a broker that is not the controller.
		return b.createTopicRemote(ctx, r)
	}
	if r.ValidateOnly {
		return b.meta.CreateTopic(ctx, r)
	}
	r.Prepare = func(_ context.Context, t *metadata.Topic) error { return b.openLocal(t) }
	t, err := b.meta.CreateTopic(ctx, r)
	if err != nil {
		// Drop the logs of the replicas that did open (and free their
		// files) now rather than at the next metadata change.
		b.reconcile()
		return nil, err
	}
	b.awaitReplicas(ctx, t.Partitions)
	return t, nil
}

// awaitReplicas holds the answer to a metadata change that gave brokers
// the replicas of parts until each of those brokers has opened them (see
// controller.Service.AwaitApplied), so that a client told "created" finds
// every leader ready. It is called on the active controller, which made
// the change; it never fails, and ends with ctx.
func (b *Broker) awaitReplicas(ctx context.Context, parts []metadata.Partition) {
	if b.ctrlSvc == nil {
		return
	}
	var ids []int32
	for _, p := range parts {
		for _, id := range p.Replicas {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	b.ctrlSvc.AwaitApplied(ctx, ids, int64(b.meta.Image().Index()))
}

// ensureReplica opens or updates the local replica of partition p of t
// and follows its leader when this broker is a follower.
func (b *Broker) ensureReplica(t *metadata.Topic, p metadata.Partition) error {
	cfg, minISR := b.logConfig(t)
	// Never below the state machine's value: it counts replicas that left
	// the ISR below that minimum as holding every committed record (ELR).
	minISR = max(minISR, b.meta.Image().MinISR(t))
	tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
	rp, tr, err := b.replicas.Ensure(tp, cfg, replica.State{
		LeaderID:       p.Leader,
		LeaderEpoch:    p.LeaderEpoch,
		PartitionEpoch: p.PartitionEpoch,
		Replicas:       p.Replicas,
		ISR:            p.ISR,
		ELR:            p.ELR,
		MinISR:         minISR,
		TopicID:        t.ID,
	})
	if err != nil {
		return err
	}
	switch {
	case p.Leader == b.nodeID:
		if tr == replica.BecameLeader {
			b.fetchers.Unfollow(tp)
			b.log.Info("leading partition", slog.String("topic", t.Name), slog.Int("partition", int(p.Partition)),
				slog.Int("leader.epoch", int(p.LeaderEpoch)), slog.Any("isr", p.ISR))
		}
	case p.Leader >= 0:
		// A replica a reassignment adds here fetches under the
		// reassignment throttle until it is in sync.
		b.fetchers.SetThrottled(tp, slices.Contains(p.AddingReplicas, b.nodeID) && !slices.Contains(p.ISR, b.nodeID))
		// Idempotent for an unchanged leader and epoch; restarts a
		// fetcher that stopped.
		b.fetchers.Follow(rp, t.ID, p.Leader, p.LeaderEpoch)
	default:
		b.fetchers.Unfollow(tp)
	}
	return nil
}

// replicaWork is a partition whose local replica ensureReplicas opens or
// updates.
type replicaWork struct {
	t *metadata.Topic
	p metadata.Partition
}

// replicaOpeners is how many replicas ensureReplicas opens at once. A new
// log costs a few fsyncs (its directory, partition.metadata), which the
// filesystem's journal commits together when they come at once; the
// other work is syscalls, bounded by the CPUs whatever the count. 10,000
// partitions open in seconds this way instead of a minute or more.
const replicaOpeners = 32

// ensureReplicas runs ensureReplica for every work item, replicaOpeners at
// a time, and returns the partitions that failed. Items name distinct
// partitions.
func (b *Broker) ensureReplicas(work []replicaWork) map[storage.TopicPartition]error {
	failed := map[storage.TopicPartition]error{}
	var mu sync.Mutex
	next := make(chan replicaWork)
	var wg sync.WaitGroup
	for range min(replicaOpeners, len(work)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range next {
				if err := b.ensureReplica(w.t, w.p); err != nil {
					mu.Lock()
					failed[storage.TopicPartition{Topic: w.t.Name, Partition: w.p.Partition}] = err
					mu.Unlock()
				}
			}
		}()
	}
	for _, w := range work {
		next <- w
	}
	close(next)
	wg.Wait()
	return failed
}

// openLocal opens the local replicas of the pending topic t and reports
// those that failed, as KAFKA_STORAGE_ERROR: the logs, not the request,
// are at fault.
func (b *Broker) openLocal(t *metadata.Topic) error {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	var work []replicaWork
	for _, p := range t.Partitions {
		if slices.Contains(p.Replicas, b.nodeID) {
			work = append(work, replicaWork{t, p})
		}
	}
	failed := b.ensureReplicas(work)
	if len(failed) == 0 {
		return nil
	}
	var errs []error
	for _, tp := range slices.SortedFunc(maps.Keys(failed), compareTP) {
		errs = append(errs, fmt.Errorf("%s: %w", tpName(tp), failed[tp]))
	}
	return fmt.Errorf("%w: cannot open %d of the topic's partitions, so it was not created: %w",
		kerr.KafkaStorageError, len(errs), errors.Join(errs[:min(len(errs), 3)]...))
}
