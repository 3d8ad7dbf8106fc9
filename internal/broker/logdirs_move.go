package broker

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage"
)

// handleAlterReplicaLogDirs moves replicas between this broker's log dirs
// (v0-2). Each partition is checked at once and answered as Kafka does:
// LOG_DIR_NOT_FOUND for a directory that is not an (absolute) entry of
// log.dirs, UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does
// not know, NOT_LEADER_OR_FOLLOWER for one this broker hosts no replica
// of, NONE otherwise (and for a replica already in that dir). The move
// itself runs afterwards, as in Kafka; unlike Kafka's, which copies into
// a future replica while the current one serves, weir's stops serving the
// replica while it copies (storage.Manager.MoveLog: copy, then swap,
// crash safe), so clients of that partition retry for as long as the
// copy takes. A failed move leaves the replica where it was and is
// logged.
func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, req *kmsg.AlterReplicaLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	img := b.meta.Image()
	byTopic := map[string]int{}
	for _, d := range req.Dirs {
		dest, dirErr := -1, error(nil)
		if !filepath.IsAbs(d.Dir) {
			dirErr = kerr.LogDirNotFound
		} else if dest, dirErr = b.logs.DirIndex(d.Dir); dirErr != nil {
			dirErr = kerr.LogDirNotFound
		}
		for _, rt := range d.Topics {
			i, ok := byTopic[rt.Topic]
			if !ok {
				st := kmsg.NewAlterReplicaLogDirsResponseTopic()
				st.Topic = rt.Topic
				resp.Topics = append(resp.Topics, st)
				i = len(resp.Topics) - 1
				byTopic[rt.Topic] = i
			}
			for _, p := range rt.Partitions {
				sp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				sp.Partition = p
				tp := storage.TopicPartition{Topic: rt.Topic, Partition: p}
				_, known := img.Partition(rt.Topic, p)
				switch {
				case dirErr != nil:
					sp.ErrorCode = kerr.LogDirNotFound.Code
				case !known:
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case b.replicas.Get(tp) == nil:
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				default:
					if cur, ok := b.logs.DirOf(tp); !ok || cur != b.logs.Dirs()[dest] {
						b.startMove(tp, dest)
					}
				}
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
			}
		}
	}
	return resp
}

// startMove moves tp's replica to log dir dest in the background and
// opens it again from the metadata when done (or failed). Run waits for
// moves in flight before the logs close.
func (b *Broker) startMove(tp storage.TopicPartition, dest int) {
	b.moves.Add(1)
	go func() {
		defer b.moves.Done()
		b.fetchers.Unfollow(tp)
		err := b.replicas.MoveLog(tp, dest)
		if err != nil && !errors.Is(err, storage.ErrMoving) {
			b.log.Warn("moving replica to another log dir failed; it stays where it was", slog.String("topic", tp.Topic),
				slog.Int("partition", int(tp.Partition)), slog.String("to", b.logs.Dirs()[dest]), slog.Any("err", err))
		}
		b.reconcileMu.Lock()
		b.retry[tp] = true
		b.reconcileMu.Unlock()
		b.reconcile()
	}()
}
