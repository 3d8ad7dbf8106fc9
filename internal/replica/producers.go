package replica

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/producerstate"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// Open wraps an open log like New and attaches the partition's producer
// state: loaded from its latest valid snapshot, then brought up to the log
// end by replaying the batches after it. From then on the log keeps the
// state in step (appends as leader or follower, truncation, snapshots at
// roll and close), and AppendAsLeader drops retried duplicates.
func Open(tp storage.TopicPartition, log *storage.Log, localID int32, logger *slog.Logger) (*Partition, error) {
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("topic", tp.Topic, "partition", tp.Partition)
	ps, from, err := producerstate.Load(log.Dir(), log.LogStartOffset(), log.LogEndOffset(), logger)
	if err != nil {
		return nil, fmt.Errorf("partition %s-%d: load producer state: %w", tp.Topic, tp.Partition, err)
	}
	start := time.Now()
	if err := log.SetProducerStateHook(ps, from); err != nil {
		return nil, fmt.Errorf("partition %s-%d: replay producer state from %d: %w", tp.Topic, tp.Partition, from, err)
	}
	if n := log.LogEndOffset() - from; n > 0 {
		logger.Info("rebuilt producer state from the log", "from", from, "to", log.LogEndOffset(),
			"producers", ps.Len(), "took", time.Since(start).Round(time.Millisecond))
	}
	p := New(tp, log, localID)
	p.producers = ps
	p.logger = logger
	return p, nil
}

// SetLogger sets the logger of replicas opened from now on; call it
// before the first Ensure.
func (m *Manager) SetLogger(l *slog.Logger) { m.logger = l }

func (m *Manager) log() *slog.Logger {
	if m.logger == nil {
		return slog.Default()
	}
	return m.logger
}

// Producers is the partition's producer state (nil if opened with New).
func (p *Partition) Producers() *producerstate.State { return p.producers }

// checkProducers applies the idempotence rules to a produce request's
// batches before they are appended. A duplicate of one of a producer's
// last 5 batches yields that batch's offsets (dup = true); nothing is to
// be appended and the producer gets them with no error. Callers hold
// appendMu, so nothing is appended between the check and the append.
//
// Malformed input is left to the log's validation, which names it
// precisely: if the headers do not parse, or a batch that would be
// answered from the state fails its CRC, the check stands aside.
func (p *Partition) checkProducers(records []byte) (info storage.AppendInfo, dup bool, err error) {
	if p.producers == nil {
		return storage.AppendInfo{}, false, nil
	}
	var stack [4]storage.BatchInfo
	batches := stack[:0]
	idempotent := false
	for pos := 0; pos < len(records); {
		h, err := recordbatch.ParseHeader(records[pos:])
		if err != nil || h.Size() > int64(len(records)-pos) {
			return storage.AppendInfo{}, false, nil
		}
		batches = append(batches, producerstate.BatchFromHeader(h))
		idempotent = idempotent || h.ProducerID >= 0
		pos += int(h.Size())
	}
	if !idempotent {
		return storage.AppendInfo{}, false, nil
	}
	d, dup, err := p.producers.Check(batches)
	if (err != nil || dup) && !crcsHold(records) {
		return storage.AppendInfo{}, false, nil
	}
	if err != nil {
		return storage.AppendInfo{}, false, fmt.Errorf("partition %s-%d: %w", p.tp.Topic, p.tp.Partition, err)
	}
	if !dup {
		return storage.AppendInfo{}, false, nil
	}
	return storage.AppendInfo{
		FirstOffset:    d.FirstOffset,
		LastOffset:     d.LastOffset,
		MaxTimestamp:   d.Timestamp,
		LogAppendTime:  -1,
		LogStartOffset: p.log.LogStartOffset(),
	}, true, nil
}

// crcsHold reports whether every batch passes its CRC check.
func crcsHold(records []byte) bool {
	err := recordbatch.Split(records, func(b []byte, _ recordbatch.Header) error {
		return recordbatch.CheckCRC(b)
	})
	return err == nil
}

// MaintainProducers drops producers silent for ttl or longer
// (producer.id.expiration.ms) and the snapshot files of deleted segments.
// The broker calls it periodically. It returns how many producers expired.
func (p *Partition) MaintainProducers(now time.Time, ttl time.Duration) (int, error) {
	if p.producers == nil {
		return 0, nil
	}
	n := p.producers.RemoveExpired(now, ttl)
	if err := p.producers.DeleteSnapshotsBefore(p.log.LogStartOffset()); err != nil {
		return n, fmt.Errorf("partition %s-%d: %w", p.tp.Topic, p.tp.Partition, err)
	}
	return n, nil
}
