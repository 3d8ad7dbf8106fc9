package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// offsetsTopic is Kafka's internal topic for group state and offsets.
const offsetsTopic = "__consumer_offsets"

// newGroupCoordinator builds the coordinator on this broker's replicas,
// configured from Kafka's group.* and offsets.* keys.
func (b *Broker) newGroupCoordinator() *group.Coordinator {
	cfg := b.opts.Config
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return group.New(group.Config{
		Log:                   offsetsLog{b},
		Topics:                topicsView{b},
		Logger:                b.log.With("component", "group"),
		InitialRebalanceDelay: ms(cfg.GroupInitialRebalanceDelayMs),
		MinSessionTimeout:     ms(cfg.GroupMinSessionTimeoutMs),
		MaxSessionTimeout:     ms(cfg.GroupMaxSessionTimeoutMs),
		OffsetsRetention:      time.Duration(cfg.OffsetsRetentionMinutes) * time.Minute,
		CommitTimeout:         ms(cfg.OffsetsCommitTimeoutMs),

		TopicMeta:                 topicsView{b},
		ConsumerHeartbeatInterval: ms(cfg.GroupConsumerHeartbeatIntervalMs),
		ConsumerSessionTimeout:    ms(cfg.GroupConsumerSessionTimeoutMs),
	})
}

// offsetsLog implements group.Log on the local replicas of
// __consumer_offsets, as a group.PipelinedLog: the coordinator appends
// under a group's lock and waits for the followers without it.
type offsetsLog struct{ b *Broker }

var _ group.PipelinedLog = offsetsLog{}

func (l offsetsLog) partition(p int32) (*replica.Partition, error) {
	rp := l.b.replicas.Get(storage.TopicPartition{Topic: offsetsTopic, Partition: p})
	if rp == nil {
		return nil, fmt.Errorf("%s-%d is not hosted here: %w", offsetsTopic, p, kerr.NotCoordinator)
	}
	return rp, nil
}

// Append writes the records as one batch and waits, as acks=-1 does, for
// the high watermark to pass it.
func (l offsetsLog) Append(ctx context.Context, p int32, recs []group.Record) error {
	a, err := l.AppendLeader(p, recs)
	if err != nil {
		return err
	}
	return l.AwaitCommit(ctx, p, a)
}

// AppendLeader writes the records as one batch, as the leader, and
// returns without waiting for the followers (group.PipelinedLog): the
// coordinator waits with AwaitCommit after releasing the group's lock.
func (l offsetsLog) AppendLeader(p int32, recs []group.Record) (group.Appended, error) {
	rp, err := l.partition(p)
	if err != nil {
		return group.Appended{}, err
	}
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{Key: r.Key, Value: r.Value}
	}
	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, rs)
	if err != nil {
		return group.Appended{}, fmt.Errorf("build %s-%d batch: %w", offsetsTopic, p, err)
	}
	info, err := rp.AppendAsLeader(batch, -1)
	if err != nil {
		// Carry Kafka's code too: the coordinator answers by it (a lost
		// leadership is NOT_COORDINATOR).
		return group.Appended{}, fmt.Errorf("append to %s-%d: %w (%w)", offsetsTopic, p, err, kerr.ErrorForCode(errorCode(err)))
	}
	a := group.Appended{LastOffset: info.LastOffset, LeaderEpoch: info.LeaderEpoch}
	// With the leader alone in the ISR the append committed it: the
	// coordinator then completes at once, without a wait.
	done, err := rp.AckState(a.LeaderEpoch, a.LastOffset)
	if done && err != nil {
		return group.Appended{}, l.commitError(p, a, err)
	}
	a.Committed = done
	return a, nil
}

// AwaitCommit waits, as acks=-1 does and on the same mechanism, for the
// high watermark to pass the batch a, or for it to become impossible.
func (l offsetsLog) AwaitCommit(ctx context.Context, p int32, a group.Appended) error {
	rp, err := l.partition(p)
	if err != nil {
		return err
	}
	w := replica.NewWaiter()
	defer w.Done()
	w.Watch(rp, replica.HighWatermark)
	for {
		done, err := rp.AckState(a.LeaderEpoch, a.LastOffset)
		if done && err != nil {
			return l.commitError(p, a, err)
		}
		if done {
			return nil
		}
		if !w.Wait(ctx, nil) {
			return fmt.Errorf("wait for %s-%d to commit offset %d: %w", offsetsTopic, p, a.LastOffset, ctx.Err())
		}
	}
}

func (l offsetsLog) commitError(p int32, a group.Appended, err error) error {
	return fmt.Errorf("commit to %s-%d at %d: %w (%w)", offsetsTopic, p, a.LastOffset, err, kerr.ErrorForCode(errorCode(err)))
}

// Replay reads the partition from its start to the log end offset, as
// Kafka's coordinator loads it: a new leader may hold records past a high
// watermark that has not caught up with them yet.
func (l offsetsLog) Replay(ctx context.Context, p int32, fn func(group.Record) error) error {
	rp, err := l.partition(p)
	if err != nil {
		return err
	}
	next := rp.Offsets().LogStart
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		o := rp.Offsets()
		if next >= o.LogEnd {
			return nil
		}
		if next < o.LogStart {
			next = o.LogStart // retention or compaction moved the start
		}
		r, err := rp.Log().Read(next, 1<<20, o.LogEnd)
		if errors.Is(err, storage.ErrOffsetOutOfRange) && next < rp.Offsets().LogStart {
			continue
		}
		if err != nil {
			return fmt.Errorf("replay %s-%d at %d: %w", offsetsTopic, p, next, err)
		}
		if r.Len == 0 {
			return nil
		}
		buf, err := r.Bytes()
		if err != nil {
			return err
		}
		err = recordbatch.Split(buf, func(batch []byte, h recordbatch.Header) error {
			next = h.LastOffset() + 1
			if h.Control() {
				return nil
			}
			recs, err := recordbatch.Records(batch)
			if err != nil {
				return fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
			}
			for _, rec := range recs {
				if err := fn(group.Record{Key: rec.Key, Value: rec.Value}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("replay %s-%d: %w", offsetsTopic, p, err)
		}
	}
}

// topicsView implements group.Topics on the metadata image.
type topicsView struct{ b *Broker }

func (v topicsView) PartitionExists(topic string, p int32) bool {
	_, ok := v.b.meta.Image().Partition(topic, p)
	return ok
}

// A partition of __consumer_offsets that the metadata says this broker
// leads but whose replica is not open yet is looked at again after a
// backoff doubling from groupRetryMin to groupRetryMax: the replica
// manager tells no one when it opens a replica (reconcile does, on the
// same metadata change, and retries failures with its own backoff).
const (
	groupRetryMin = 20 * time.Millisecond
	groupRetryMax = time.Second
)

// watchGroupPartitions makes the coordinator own exactly the partitions
// of __consumer_offsets this broker leads, following metadata changes.
// A led partition whose replica has not taken the leadership yet is
// waited for on the replica itself (its role change wakes a Waiter); one
// whose replica is not open yet is retried with a bounded backoff.
func (b *Broker) watchGroupPartitions(ctx context.Context) {
	var backoff time.Duration
	for {
		changed := b.meta.Changes()
		w := replica.NewWaiter()
		var retry <-chan time.Time
		var timer *time.Timer
		if b.syncGroupPartitions(w) {
			backoff = min(max(2*backoff, groupRetryMin), groupRetryMax)
			timer = time.NewTimer(backoff)
			retry = timer.C
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-w.C():
		case <-retry:
		}
		w.Done()
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// syncGroupPartitions elects and resigns coordinator partitions. A led
// partition whose replica is not leading at the metadata's leader epoch
// yet is registered with w (if not nil), whose channel its next role or
// epoch change wakes; missing reports one whose replica is not open.
func (b *Broker) syncGroupPartitions(w *replica.Waiter) (missing bool) {
	t := b.meta.Image().TopicByName(offsetsTopic)
	owned := b.groups.Owned()
	lead := map[int32]bool{}
	if t != nil {
		n := int32(len(t.Partitions))
		for _, p := range t.Partitions {
			if p.Leader != b.nodeID {
				continue
			}
			rp := b.replicas.Get(storage.TopicPartition{Topic: offsetsTopic, Partition: p.Partition})
			if rp == nil {
				missing = true
				continue
			}
			if w != nil {
				// No event: only state changes (role, epoch, ISR,
				// removal), which wake every waiter. Registered before
				// the check, so that a change in between is not missed.
				w.Watch(rp, 0)
			}
			if !rp.IsLeader() || rp.State().LeaderEpoch != p.LeaderEpoch {
				continue
			}
			lead[p.Partition] = true
			b.groups.ElectEpoch(p.Partition, n, p.LeaderEpoch)
		}
	}
	for p := range owned {
		if !lead[p] {
			b.groups.Resign(p)
		}
	}
	return missing
}

// ensureOffsetsTopic creates __consumer_offsets on first need, as Kafka
// does: offsets.topic.num.partitions partitions, compacted, with
// offsets.topic.segment.bytes segments, and a replication factor of
// offsets.topic.replication.factor, capped at the size of the cluster as
// configured (the quorum's voters, at least the brokers registered), so
// that a single node needs no setting. Until that many brokers are live
// the creation waits (COORDINATOR_NOT_AVAILABLE), as in Kafka: the topic
// is created once, and a replication factor once chosen stays.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) (*metadata.Topic, error) {
	img := b.meta.Image()
	if t := img.TopicByName(offsetsTopic); t != nil {
		return t, nil
	}
	cfg := b.opts.Config
	rf := min(int(cfg.OffsetsTopicReplicationFactor), max(len(b.opts.Voters), len(img.Brokers()), 1))
	if live := len(img.LiveBrokers()); live < rf {
		return nil, fmt.Errorf("%w: %s needs %d live brokers (offsets.topic.replication.factor), %d are", kerr.CoordinatorNotAvailable, offsetsTopic, rf, live)
	}
	t, err := b.createTopic(ctx, metadata.CreateTopic{
		Name:              offsetsTopic,
		NumPartitions:     cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: int16(max(rf, 1)),
		Internal:          true,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.FormatInt(cfg.OffsetsTopicSegmentBytes, 10),
			"compression.type": "producer",
		},
	})
	if errors.Is(err, metadata.ErrTopicExists) {
		if t := b.meta.Image().TopicByName(offsetsTopic); t != nil {
			return t, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", offsetsTopic, err)
	}
	b.log.Info("created internal topic", slog.String("topic", offsetsTopic), slog.Int("partitions", len(t.Partitions)), slog.Int("replication.factor", max(rf, 1)))
	b.syncGroupPartitions(nil)
	return t, nil
}
