package suite

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/weir-project/weir/bench/internal/limits"
	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/proc"
	"github.com/weir-project/weir/bench/internal/report"
	"github.com/weir-project/weir/bench/internal/scrape"
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
		func() (*peer.Broker, error) {
			ports, err := proc.FreePorts(1)
			if err != nil {
				return nil, err
			}
			url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
			b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp, "metrics.listener="+url)
			if b != nil {
				b.Metrics = url + "/metrics"
			}
			return b, err
		},
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
	// The produce peak is the broker's with no consumer; with the consumer
	// on the same cores the three may sustain less, and at half of the
	// produce peak the latency is then the consumer's queue. Half of what
	// they sustain together is the second reading of "half of peak".
	for _, b := range brokers {
		res, err := s.latencyRound(ctx, b, load.LatencyRun{Size: size, Rate: math.Inf(1), Duration: s.cfg.Latency}, false)
		if err != nil {
			s.note("end-to-end peak on %s: %v", b.Name, err)
			continue
		}
		peak := res.result.Throughput() * size / 1e6
		out = append(out, report.Latency{Peer: b.Name, RecordSize: size, PeakMBps: peak, EndToEnd: true, Rate: peak / 2 * 1e6 / size})
	}
	for _, b := range brokers {
		out = append(out, report.Latency{Peer: b.Name, RecordSize: size, Rate: lowRate})
	}
	// The Kafka brokers again at the same rates with the minimal client,
	// whose own cost and tail are a fraction of franz-go's.
	for _, l := range out {
		if l.Peer != peer.JetStream {
			l.Minimal = true
			out = append(out, l)
		}
	}
	wl := writeFloor(out)
	for r := range s.cfg.Rounds {
		if wl != nil {
			s.writeFloorRound(wl)
		}
		for _, b := range rotate(brokers, r) {
			for i := range out {
				if out[i].Peer != b.Name {
					continue
				}
				run := load.LatencyRun{Size: size, Rate: out[i].Rate, Duration: s.cfg.Latency, Warmup: 500 * time.Millisecond}
				res, err := s.latencyRound(ctx, b, run, out[i].Minimal)
				if err != nil {
					s.note("latency at %.0f records/s on %s: %v", run.Rate, out[i].Label(), err)
					continue
				}
				l := stats.LatencyPercentiles(res.result.Samples)
				out[i].Rounds = append(out[i].Rounds, report.LatencyRound{N: l.N, P50: l.P50, P99: l.P99, P999: l.P999,
					Received:         float64(l.N) / (run.Duration - run.Warmup).Seconds(),
					BrokerProduceP99: res.produceP99, BrokerFetchP99: res.fetchP99,
					StallP999: res.stallP999, StallMax: res.stallMax})
			}
		}
	}
	s.run.Latency = out
	s.run.WriteLatency = wl
	return nil
}

// writeChunk is the paced append's write size: about what the latency
// producer sends per Produce at weir's half end-to-end peak (one request
// in flight, filled while the previous one is answered).
const writeChunk = 256 << 10

// writeFloor is the page-cache latency measurement for weir's end-to-end
// latency rate, or nil when weir has none.
func writeFloor(ls []report.Latency) *report.WriteLatency {
	for _, l := range ls {
		if l.Peer == peer.Weir && l.EndToEnd && !l.Minimal {
			return &report.WriteLatency{Chunk: writeChunk, MBps: l.Rate * float64(l.RecordSize) / 1e6}
		}
	}
	return nil
}

// writeFloorRound appends to a file at the rate for as long as a latency
// run, on the machine with no broker or client busy.
func (s *Suite) writeFloorRound(wl *report.WriteLatency) {
	ds, err := limits.PacedAppend(s.cfg.Tmp, wl.MBps*1e6, wl.Chunk, s.cfg.Latency)
	if err != nil || len(ds) == 0 {
		s.note("latency: page-cache write limit: %v", err)
		return
	}
	l := stats.LatencyPercentiles(ds)
	wl.Rounds = append(wl.Rounds, report.LatencyRound{N: l.N, P50: l.P50, P99: l.P99, P999: l.P999})
	wl.Max = append(wl.Max, ds[len(ds)-1])
}

// roundResult is one latency run and, for a broker with a metrics page,
// its own p99s over the run.
type roundResult struct {
	result               load.LatencyResult
	produceP99, fetchP99 time.Duration
	stallP999, stallMax  time.Duration // the stall probe's, over the run
}

// Series of weir's /metrics the latency case reads.
const (
	totalTimeSeries = "kafka_network_requestmetrics_totaltime_seconds"
	localTimeSeries = "kafka_network_requestmetrics_localtime_seconds"
)

// latencyRound runs one latency run on a new topic of b, with the
// minimal client if minimal.
func (s *Suite) latencyRound(ctx context.Context, b *peer.Broker, run load.LatencyRun, minimal bool) (roundResult, error) {
	var out roundResult
	topic := s.topic()
	if err := createTopic(ctx, b, topic, 1, 1, nil); err != nil {
		return out, err
	}
	defer func() {
		if err := deleteTopic(ctx, b, topic, 1); err != nil {
			s.note("latency on %s, delete topic: %v", b.Name, err)
		}
	}()
	var before [2]scrape.Histogram
	if b.Metrics != "" {
		var err error
		if before, err = brokerTimes(ctx, b.Metrics); err != nil {
			return out, err
		}
	}
	// No warm-up (s.warm) here, unlike a produce run: a latency run lasts
	// longer than the kernel waits before reporting freed pages to the
	// host, and measured after one the latency was worse, not better (the
	// report's method section has the figures).
	var err error
	probe := limits.StartStallProbe()
	switch {
	case isNATS(b):
		out.result, err = load.LatencyJetStream(ctx, b.Addrs[0], topic, run)
	case minimal:
		out.result, err = load.LatencyMinimal(ctx, b.Addrs[0], topic, run)
	default:
		out.result, err = load.LatencyKafka(ctx, b.Addrs, topic, run)
	}
	late := stats.LatencyPercentiles(probe.Stop())
	out.stallP999, out.stallMax = late.P999, late.Max
	if err != nil || b.Metrics == "" {
		return out, err
	}
	after, err := brokerTimes(ctx, b.Metrics)
	if err != nil {
		return out, err
	}
	seconds := func(q float64) time.Duration {
		if math.IsNaN(q) {
			return 0 // nothing observed: shown as not measured
		}
		return time.Duration(q * float64(time.Second))
	}
	out.produceP99 = seconds(after[0].Sub(before[0]).Quantile(0.99))
	out.fetchP99 = seconds(after[1].Sub(before[1]).Quantile(0.99))
	return out, nil
}

// brokerTimes scrapes the Produce total-time and consumer-Fetch
// local-time histograms.
func brokerTimes(ctx context.Context, url string) ([2]scrape.Histogram, error) {
	var h [2]scrape.Histogram
	var err error
	if h[0], err = scrape.Get(ctx, url, totalTimeSeries, "request", "Produce"); err != nil {
		return h, err
	}
	if h[1], err = scrape.Get(ctx, url, localTimeSeries, "request", "FetchConsumer"); err != nil {
		return h, err
	}
	return h, nil
}

// measurePeak is one produce run of the peak workload.
func (s *Suite) measurePeak(ctx context.Context, b *peer.Broker, size int) (float64, error) {
	topic := s.topic()
	if err := createTopic(ctx, b, topic, 1, 1, nil); err != nil {
		return 0, err
	}
	defer func() { _ = deleteTopic(ctx, b, topic, 1) }()
	res, _, err := s.produce(ctx, b, topic, load.Workload{RecordSize: size, Partitions: 1, Producers: 1, Acks: 1,
		Duration: s.cfg.Duration, MaxBytes: s.cfg.MaxBytes})
	if err != nil {
		return 0, fmt.Errorf("peak: %w", err)
	}
	return stats.MBps(res.Bytes, res.Elapsed), nil
}
