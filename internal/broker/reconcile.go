package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

// watchMetadata brings local replicas in line with each new metadata image.
func (b *Broker) watchMetadata(ctx context.Context) {
	for {
		changed := b.meta.Changes()
		if err := b.reconcile(); err != nil {
			b.log.Error("apply metadata", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// reconcile opens (or updates) a replica for every partition assigned to
// this broker and deletes the logs of partitions that went away.
func (b *Broker) reconcile() error {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	img := b.meta.Image()
	if img == b.lastImage {
		return nil
	}
	var errs []error
	want := map[storage.TopicPartition]bool{}
	for _, name := range img.SortedTopicNames() {
		t := img.TopicByName(name)
		cfg, minISR := b.logConfig(t)
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, b.nodeID) {
				continue
			}
			tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
			want[tp] = true
			_, _, err := b.replicas.Ensure(tp, cfg, replica.State{
				LeaderID:       p.Leader,
				LeaderEpoch:    p.LeaderEpoch,
				PartitionEpoch: p.PartitionEpoch,
				Replicas:       p.Replicas,
				ISR:            p.ISR,
				MinISR:         minISR,
				TopicID:        t.ID,
			})
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, tp := range b.logs.Partitions() {
		if want[tp] {
			continue
		}
		if _, ok := b.replicas.StoredTopicID(tp); !ok {
			// A log whose topic we cannot account for: keep the data and
			// say so, rather than delete what may not be ours to delete.
			b.log.Warn("log dir for unknown partition left in place", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)))
			continue
		}
		b.log.Info("deleting partition", slog.String("topic", tp.Topic), slog.Int("partition", int(tp.Partition)))
		if err := b.replicas.Remove(tp); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		b.lastImage = img
	}
	return errors.Join(errs...)
}

// createTopic creates a topic through the controller and opens its local
// replicas before returning, so the caller can answer with a ready leader.
func (b *Broker) createTopic(ctx context.Context, r metadata.CreateTopic) (*metadata.Topic, error) {
	t, err := b.meta.CreateTopic(ctx, r)
	if err != nil || r.ValidateOnly {
		return t, err
	}
	if err := b.reconcile(); err != nil {
		return t, fmt.Errorf("open partitions of %q: %w", r.Name, err)
	}
	return t, nil
}
