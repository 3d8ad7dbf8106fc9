package suite

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/report"
	"github.com/weir-project/weir/bench/internal/stats"
)

// lowRate is the fixed rate of the second latency run: far from every
// broker's limit, so it shows latency without queueing.
const lowRate = 1000

// latency measures end-to-end latency on one partition at half of each
// broker's peak (its median in the 1 KiB, 1 partition, 1 producer, acks=1
// produce case; measured here first if that case did not run).
func (s *Suite) latency(ctx context.Context) error {
	const size = 1024
	if !s.selected("latency") {
		return nil
	}
	s.log.Info("case", "id", "latency")
	brokers, err := s.startAll(
		func() (*peer.Broker, error) { b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp); return b, err },
		func() (*peer.Broker, error) { return peer.StartKfake(s.bins.Kfake) },
		func() (*peer.Broker, error) { return peer.StartNATS(s.bins.NATS, s.cfg.Tmp) },
	)
	if err != nil {
		return err
	}
	defer s.stopAll(brokers)
	peakCase := s.run.Find(report.CaseID(report.Produce, size, 1, 1, 1))
	var out []report.Latency
	for _, b := range brokers {
		peak := medianMBps(peakCase, b.Name)
		if math.IsNaN(peak) {
			if peak, err = s.measurePeak(ctx, b, size); err != nil {
				s.note("latency peak on %s: %v", b.Name, err)
				continue
			}
		}
		out = append(out, report.Latency{Peer: b.Name, RecordSize: size, PeakMBps: peak, Rate: peak / 2 * 1e6 / size})
	}
	for _, b := range brokers {
		out = append(out, report.Latency{Peer: b.Name, RecordSize: size, Rate: lowRate})
	}
	for r := range s.cfg.Rounds {
		for _, b := range rotate(brokers, r) {
			for i := range out {
				if out[i].Peer != b.Name {
					continue
				}
				run := load.LatencyRun{Size: size, Rate: out[i].Rate, Duration: s.cfg.Latency, Warmup: 500 * time.Millisecond}
				ds, err := s.latencyRound(ctx, b, run)
				if err != nil {
					s.note("latency at %.0f records/s on %s: %v", run.Rate, b.Name, err)
					continue
				}
				l := stats.LatencyPercentiles(ds)
				out[i].Rounds = append(out[i].Rounds, report.LatencyRound{N: l.N, P50: l.P50, P99: l.P99, P999: l.P999,
					Received: float64(l.N) / (run.Duration - run.Warmup).Seconds()})
			}
		}
	}
	s.run.Latency = out
	return nil
}

func (s *Suite) latencyRound(ctx context.Context, b *peer.Broker, run load.LatencyRun) ([]time.Duration, error) {
	topic := s.topic()
	if err := createTopic(ctx, b, topic, 1, 1, nil); err != nil {
		return nil, err
	}
	defer func() {
		if err := deleteTopic(ctx, b, topic, 1); err != nil {
			s.note("latency on %s, delete topic: %v", b.Name, err)
		}
	}()
	if isNATS(b) {
		return load.LatencyJetStream(ctx, b.Addrs[0], topic, run)
	}
	return load.LatencyKafka(ctx, b.Addrs, topic, run)
}

// measurePeak is one produce run of the peak workload.
func (s *Suite) measurePeak(ctx context.Context, b *peer.Broker, size int) (float64, error) {
	topic := s.topic()
	if err := createTopic(ctx, b, topic, 1, 1, nil); err != nil {
		return 0, err
	}
	defer func() { _ = deleteTopic(ctx, b, topic, 1) }()
	res, _, err := produce(ctx, b, topic, load.Workload{RecordSize: size, Partitions: 1, Producers: 1, Acks: 1,
		Duration: s.cfg.Duration, MaxBytes: s.cfg.MaxBytes})
	if err != nil {
		return 0, fmt.Errorf("peak: %w", err)
	}
	return stats.MBps(res.Bytes, res.Elapsed), nil
}
