package broker

import (
	"context"

	"github.com/weir-project/weir/internal/metadata"
)

// watchDeletedTopics tells the group coordinator about every topic the
// metadata deletes, as Kafka's metadata publisher calls the coordinator's
// onPartitionsDeleted: the coordinator removes the groups' committed
// offsets of its partitions (group.Coordinator.TopicsDeleted). Every
// broker does it for the groups it coordinates. since is an image taken
// before the coordinator owned any partition: a deletion it holds is
// found when the coordinator loads the partition (which reads a newer
// image), a later one by this loop. A partition loading while the loop
// sweeps is swept by its load: its groups are installed either before the
// loop lists the groups or after the loop read the image.
func (b *Broker) watchDeletedTopics(ctx context.Context, since *metadata.Image) {
	last := since
	for {
		changed := b.meta.Changes()
		img := b.meta.Image()
		if img != last {
			var names []string
			for _, t := range metadata.DiffTopics(last, img).Removed {
				if !t.Pending { // an aborted creation had no offsets
					names = append(names, t.Name)
				}
			}
			if len(names) > 0 {
				b.groups.TopicsDeleted(names)
			}
			last = img
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
