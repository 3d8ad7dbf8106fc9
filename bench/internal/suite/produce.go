package suite

import (
	"context"
	"math"

	"github.com/weir-project/weir/bench/internal/limits"
	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/report"
	"github.com/weir-project/weir/bench/internal/stats"
)

// fetchChunk is the size the consume limits move their bytes in: the
// consumer's per-partition fetch size (franz-go and Kafka: 1 MB).
const fetchChunk = 1 << 20

// produceMatrix runs every produce workload (record size x partitions x
// producers x acks); the acks=1 single-producer ones are then consumed
// back, from the page cache and cold.
func (s *Suite) produceMatrix(ctx context.Context) error {
	for _, size := range s.cfg.Sizes {
		for _, parts := range []int{1, 8} {
			for _, prods := range s.cfg.Producers {
				for _, acks := range []int{1, -1} {
					id := report.CaseID(report.Produce, size, parts, prods, acks)
					if !s.selected(id) {
						continue
					}
					if err := s.produceCombo(ctx, size, parts, prods, acks); err != nil {
						s.note("%s: %v", id, err)
					}
				}
			}
		}
	}
	return nil
}

// comboCases are the cases one produce workload fills.
type comboCases struct {
	prod, cons, cold *report.Case
}

func newCase(kind string, size, parts, prods, acks int, brokers []*peer.Broker, limitNames ...string) *report.Case {
	c := &report.Case{ID: report.CaseID(kind, size, parts, prods, acks), Kind: kind,
		RecordSize: size, Partitions: parts, Producers: prods, Acks: acks}
	for _, b := range brokers {
		c.Peers = append(c.Peers, report.Series{Name: b.Name})
	}
	for _, n := range limitNames {
		c.Limits = append(c.Limits, report.Series{Name: n})
	}
	return c
}

func (s *Suite) produceCombo(ctx context.Context, size, parts, prods, acks int) error {
	s.log.Info("case", "id", report.CaseID(report.Produce, size, parts, prods, acks))
	starts := []func() (*peer.Broker, error){
		func() (*peer.Broker, error) { b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp); return b, err },
		func() (*peer.Broker, error) { return peer.StartKfake(s.bins.Kfake) },
	}
	if acks == 1 {
		starts = append(starts, func() (*peer.Broker, error) { return peer.StartNATS(s.bins.NATS, s.cfg.Tmp) })
	}
	brokers, err := s.startAll(append(starts, func() (*peer.Broker, error) { return peer.StartSink(s.bins.Kfake) })...)
	if err != nil {
		return err
	}
	defer s.stopAll(brokers)
	sink := brokers[len(brokers)-1] // a limit, not a peer
	brokers = brokers[:len(brokers)-1]

	cc := comboCases{prod: newCase(report.Produce, size, parts, prods, acks, brokers, report.LimitLoopback, report.LimitClient, report.LimitStore)}
	if prods == 1 && acks == 1 {
		cc.cons = newCase(report.Consume, size, parts, prods, acks, brokers, report.LimitLoopback, report.LimitSendfile)
		var disk []*peer.Broker
		for _, b := range brokers {
			if b.Dir != "" {
				disk = append(disk, b)
			}
		}
		cc.cold = newCase(report.ConsumeCold, size, parts, prods, acks, disk, report.LimitSendfileCold)
	}
	w := load.Workload{RecordSize: size, Partitions: parts, Producers: prods, Acks: acks,
		Duration: s.cfg.Duration, MaxBytes: s.cfg.MaxBytes}
	minimal := newMinimalCases(w, brokers)
	for r := range s.cfg.Rounds {
		weirBytes, weirBatch := int64(0), 0.0
		for _, b := range rotate(brokers, r) {
			res := s.produceRound(ctx, b, w, cc)
			if b.Name == peer.Weir {
				weirBytes, weirBatch = res.Bytes, res.BatchBytes
			}
		}
		s.limitRound(cc, weirBytes, weirBatch)
		s.clientLimitRound(ctx, sink, w, cc)
		if minimal != nil {
			minimal.round(ctx, s, w, r)
			minimal.copyLimits(cc)
		}
	}
	s.run.Cases = append(s.run.Cases, *cc.prod)
	if cc.cons != nil {
		s.run.Cases = append(s.run.Cases, *cc.cons, *cc.cold)
	}
	if minimal != nil {
		s.run.Cases = append(s.run.Cases, minimal.cases()...)
	}
	return nil
}

// produceRound measures one broker in one round: produce, then (for the
// consume cases) consume from the page cache, evict, consume cold.
func (s *Suite) produceRound(ctx context.Context, b *peer.Broker, w load.Workload, cc comboCases) load.Result {
	topic := s.topic()
	fail := func(what string, err error) {
		s.note("%s on %s, %s: %v", cc.prod.ID, b.Name, what, err)
	}
	if err := createTopic(ctx, b, topic, w.Partitions, 1, nil); err != nil {
		fail("create topic", err)
		addRound(cc.prod.Peer(b.Name), load.Result{}, false)
		s.consumeRounds(ctx, b, topic, w, cc, -1)
		return load.Result{}
	}
	defer func() {
		if err := deleteTopic(ctx, b, topic, w.Partitions); err != nil {
			fail("delete topic", err)
		}
	}()
	res, warm, err := s.produce(ctx, b, topic, w)
	if err != nil {
		fail("produce", err)
	}
	se := cc.prod.Peer(b.Name)
	addRound(se, res, err == nil)
	se.Batch = append(se.Batch, batchOrNaN(res, err == nil && !isNATS(b)))
	want := int64(-1)
	if err == nil {
		want = res.Records + warm
	}
	s.consumeRounds(ctx, b, topic, w, cc, want)
	return res
}

func batchOrNaN(res load.Result, ok bool) float64 {
	if !ok || res.BatchBytes == 0 {
		return math.NaN()
	}
	return res.BatchBytes
}

// consumeRounds fills the consume cases' round for b; want < 0 means the
// produce failed, so the round is a failure too.
func (s *Suite) consumeRounds(ctx context.Context, b *peer.Broker, topic string, w load.Workload, cc comboCases, want int64) {
	if cc.cons == nil {
		return
	}
	if want < 0 {
		addRound(cc.cons.Peer(b.Name), load.Result{}, false)
		if se := cc.cold.Peer(b.Name); se != nil {
			addRound(se, load.Result{}, false)
		}
		return
	}
	res, err := consume(ctx, b, topic, w.Partitions, want)
	if err != nil {
		s.note("%s on %s: %v", cc.cons.ID, b.Name, err)
	}
	addRound(cc.cons.Peer(b.Name), res, err == nil)
	se := cc.cold.Peer(b.Name)
	if se == nil {
		return
	}
	if err := limits.Evict(b.Dir); err != nil {
		s.note("%s on %s: %v", cc.cold.ID, b.Name, err)
		addRound(se, load.Result{}, false)
		return
	}
	res, err = consume(ctx, b, topic, w.Partitions, want)
	if err != nil {
		s.note("%s on %s: %v", cc.cold.ID, b.Name, err)
	}
	addRound(se, res, err == nil)
}

// clientLimitRound runs the round's produce against the sink broker.
func (s *Suite) clientLimitRound(ctx context.Context, sink *peer.Broker, w load.Workload, cc comboCases) {
	topic := s.topic()
	err := createTopic(ctx, sink, topic, w.Partitions, 1, nil)
	var res load.Result
	if err == nil {
		res, _, err = s.produce(ctx, sink, topic, w)
	}
	if err != nil {
		s.note("%s client limit: %v", cc.prod.ID, err)
	}
	addLimit(cc.prod.Peer(report.LimitClient), res.Bytes, res.Elapsed, err == nil)
}

// limitRound measures the machine's limits with the bytes weir moved this
// round (or the run's cap, if weir failed).
func (s *Suite) limitRound(cc comboCases, bytes int64, batch float64) {
	if bytes <= 0 {
		bytes = s.cfg.MaxBytes / 4
	}
	bytes = min(bytes, 2<<30)
	if batch <= 0 {
		batch = fetchChunk
	}
	lr, err := limits.Loopback(bytes, int(batch))
	if err != nil {
		s.note("%s loopback limit: %v", cc.prod.ID, err)
	}
	addLimit(cc.prod.Peer(report.LimitLoopback), lr.Bytes, lr.Elapsed, err == nil)
	// The store limit writes into fresh page cache as a broker does, so
	// it gets the same warm-up as a produce run.
	s.warm("store limit")
	sr, err := limits.Store(s.cfg.Tmp, bytes, int(batch))
	if err != nil {
		s.note("%s store limit: %v", cc.prod.ID, err)
	}
	addLimitCPU(cc.prod.Peer(report.LimitStore), sr, err == nil)
	if cc.cons == nil {
		return
	}
	lr, err = limits.Loopback(bytes, fetchChunk)
	if err != nil {
		s.note("%s loopback limit: %v", cc.cons.ID, err)
	}
	addLimit(cc.cons.Peer(report.LimitLoopback), lr.Bytes, lr.Elapsed, err == nil)
	for _, v := range []struct {
		c    *report.Case
		name string
		cold bool
	}{{cc.cons, report.LimitSendfile, false}, {cc.cold, report.LimitSendfileCold, true}} {
		sr, err := limits.Sendfile(s.cfg.Tmp, min(bytes, 1<<30), fetchChunk, v.cold)
		if err != nil {
			s.note("%s %s limit: %v", v.c.ID, v.name, err)
		}
		addLimit(v.c.Peer(v.name), sr.Bytes, sr.Elapsed, err == nil)
	}
}

// medianMBps is the median throughput of a case's broker, NaN if none.
func medianMBps(c *report.Case, name string) float64 {
	if c == nil {
		return math.NaN()
	}
	se := c.Peer(name)
	if se == nil {
		return math.NaN()
	}
	m := stats.Summarize(se.MBps)
	if m.N == 0 {
		return math.NaN()
	}
	return m.Median
}
