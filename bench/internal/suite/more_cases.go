package suite

import (
	"context"

	"github.com/weir-project/weir/bench/internal/limits"
	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/report"
)

// weirNoFsync names plain weir beside the fsyncing one.
const weirNoFsync = "weir, no fsync"

// produceFsync is weir with log.flush.interval.messages=1 (an fsync after
// every append) against plain weir and against a file append fsynced
// after every write of the same batch size.
func (s *Suite) produceFsync(ctx context.Context) error {
	const size, parts = 1024, 1
	id := report.CaseID(report.ProduceFsync, size, parts, 1, 1)
	if !s.selected(id) {
		return nil
	}
	s.log.Info("case", "id", id)
	brokers, err := s.startAll(
		func() (*peer.Broker, error) {
			b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp, "log.flush.interval.messages=1")
			return b, err
		},
		func() (*peer.Broker, error) {
			b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp)
			if b != nil {
				b.Name = weirNoFsync
			}
			return b, err
		},
	)
	if err != nil {
		return err
	}
	defer s.stopAll(brokers)
	c := newCase(report.ProduceFsync, size, parts, 1, 1, brokers, report.LimitFileFsync, report.LimitFileAppend)
	w := load.Workload{RecordSize: size, Partitions: parts, Producers: 1, Acks: 1, Duration: s.cfg.Duration, MaxBytes: s.cfg.MaxBytes}
	cc := comboCases{prod: c}
	for r := range s.cfg.Rounds {
		var bytes int64
		var batch float64
		for _, b := range rotate(brokers, r) {
			res := s.produceRound(ctx, b, w, cc)
			if b.Name == peer.Weir {
				bytes, batch = res.Bytes, res.BatchBytes
			}
		}
		if bytes <= 0 || batch <= 0 {
			bytes, batch = s.cfg.MaxBytes/8, fetchChunk
		}
		fr, err := limits.FileAppend(s.cfg.Tmp, bytes, int(batch), 1)
		if err != nil {
			s.note("%s fsync limit: %v", id, err)
		}
		addLimit(c.Peer(report.LimitFileFsync), fr.Bytes, fr.Elapsed, err == nil)
		fr, err = limits.FileAppend(s.cfg.Tmp, bytes, int(batch), 0)
		if err != nil {
			s.note("%s append limit: %v", id, err)
		}
		addLimit(c.Peer(report.LimitFileAppend), fr.Bytes, fr.Elapsed, err == nil)
	}
	s.run.Cases = append(s.run.Cases, *c)
	return nil
}

// cluster compares a 3-node weir, RF 3 with acks=-1, with one node and
// acks=1, in the same rounds.
func (s *Suite) cluster(ctx context.Context) error {
	const size, parts = 1024, 8
	id := report.CaseID(report.Cluster, size, parts, 1, -1)
	if !s.selected(id) {
		return nil
	}
	s.log.Info("case", "id", id)
	brokers, err := s.startAll(
		func() (*peer.Broker, error) {
			b, err := peer.StartWeirCluster(s.bins.Weir, s.cfg.Tmp, 3)
			if b != nil {
				b.Name = report.ClusterRF3
			}
			return b, err
		},
		func() (*peer.Broker, error) {
			b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp)
			if b != nil {
				b.Name = report.ClusterSingle
			}
			return b, err
		},
	)
	if err != nil {
		return err
	}
	defer s.stopAll(brokers)
	c := newCase(report.Cluster, size, parts, 1, -1, brokers)
	minISR := "2"
	for r := range s.cfg.Rounds {
		for _, b := range rotate(brokers, r) {
			w := load.Workload{RecordSize: size, Partitions: parts, Producers: 1, Acks: 1,
				Duration: s.cfg.Duration, MaxBytes: s.cfg.MaxBytes}
			rf, configs := 1, map[string]*string(nil)
			if b.Name == report.ClusterRF3 {
				w.Acks, rf, configs = -1, 3, map[string]*string{"min.insync.replicas": &minISR}
			}
			s.clusterRound(ctx, c, b, w, rf, configs)
		}
	}
	s.run.Cases = append(s.run.Cases, *c)
	return nil
}

func (s *Suite) clusterRound(ctx context.Context, c *report.Case, b *peer.Broker, w load.Workload, rf int, configs map[string]*string) {
	topic := s.topic()
	se := c.Peer(b.Name)
	if err := createTopic(ctx, b, topic, w.Partitions, rf, configs); err != nil {
		s.note("%s on %s, create topic: %v", c.ID, b.Name, err)
		addRound(se, load.Result{}, false)
		return
	}
	res, _, err := s.produce(ctx, b, topic, w)
	if err != nil {
		s.note("%s on %s: %v", c.ID, b.Name, err)
	}
	addRound(se, res, err == nil)
	if err := deleteTopic(ctx, b, topic, w.Partitions); err != nil {
		s.note("%s on %s, delete topic: %v", c.ID, b.Name, err)
	}
}
