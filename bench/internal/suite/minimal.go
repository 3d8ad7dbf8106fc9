package suite

import (
	"context"

	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/report"
)

// minimalCases are the minimal client's cases of one produce workload
// (see load.ProduceMinimal): the headline workload (1 KiB, 8 partitions,
// one producer) measured again on the Kafka brokers with a client that
// costs a fraction of franz-go's, in the same rounds as the franz-go
// case, so the report can tell the broker's bound from the client's.
type minimalCases struct {
	brokers    []*peer.Broker // the Kafka ones
	prod, cons *report.Case   // cons: acks=1 only
}

// newMinimalCases returns the minimal client's cases for w, or nil when w
// is not the headline workload.
func newMinimalCases(w load.Workload, brokers []*peer.Broker) *minimalCases {
	if w.RecordSize != 1024 || w.Partitions != 8 || w.Producers != 1 {
		return nil
	}
	m := &minimalCases{}
	for _, b := range brokers {
		if !isNATS(b) {
			m.brokers = append(m.brokers, b)
		}
	}
	m.prod = newCase(report.ProduceMinimal, w.RecordSize, w.Partitions, w.Producers, w.Acks, m.brokers,
		report.LimitLoopback, report.LimitStore)
	if w.Acks == 1 {
		m.cons = newCase(report.ConsumeMinimal, w.RecordSize, w.Partitions, w.Producers, w.Acks, m.brokers,
			report.LimitLoopback, report.LimitSendfile)
	}
	return m
}

// round measures each broker once, in round r's order: produce with the
// minimal client (after the same memory warm-up as a franz-go run), then
// for acks=1 consume it back with the minimal client.
func (m *minimalCases) round(ctx context.Context, s *Suite, w load.Workload, r int) {
	for _, b := range rotate(m.brokers, r) {
		s.minimalRound(ctx, b, w, m)
	}
}

func (s *Suite) minimalRound(ctx context.Context, b *peer.Broker, w load.Workload, m *minimalCases) {
	topic := s.topic()
	prod := m.prod.Peer(b.Name)
	fail := func(c *report.Case, what string, err error) {
		s.note("%s on %s, %s: %v", c.ID, b.Name, what, err)
	}
	if err := createTopic(ctx, b, topic, w.Partitions, 1, nil); err != nil {
		fail(m.prod, "create topic", err)
		addRound(prod, load.Result{}, false)
		prod.Batch = append(prod.Batch, nan)
		if m.cons != nil {
			addRound(m.cons.Peer(b.Name), load.Result{}, false)
		}
		return
	}
	defer func() {
		if err := deleteTopic(ctx, b, topic, w.Partitions); err != nil {
			fail(m.prod, "delete topic", err)
		}
	}()
	s.warm(b.Name)
	res, err := load.ProduceMinimal(ctx, b.Addrs[0], topic, w, b.CPU)
	if err != nil {
		fail(m.prod, "produce", err)
	}
	addRound(prod, res, err == nil)
	prod.Batch = append(prod.Batch, batchOrNaN(res, err == nil))
	if m.cons == nil {
		return
	}
	if err != nil {
		addRound(m.cons.Peer(b.Name), load.Result{}, false)
		return
	}
	cres, err := load.ConsumeMinimal(ctx, b.Addrs[0], topic, w.Partitions, res.Records, b.CPU)
	if err != nil {
		fail(m.cons, "consume", err)
	}
	addRound(m.cons.Peer(b.Name), cres, err == nil)
}

// copyLimits gives the minimal cases the round's limits, measured once
// for the franz-go cases of the same workload (the batch sizes of the two
// clients differ by a few percent).
func (m *minimalCases) copyLimits(cc comboCases) {
	copyLast(m.prod, cc.prod)
	if m.cons != nil {
		copyLast(m.cons, cc.cons)
	}
}

// copyLast appends to each of dst's limits the last round of src's limit
// of the same name.
func copyLast(dst, src *report.Case) {
	for i := range dst.Limits {
		from := src.Peer(dst.Limits[i].Name)
		if from == nil || len(from.MBps) == 0 {
			continue
		}
		d := &dst.Limits[i]
		d.MBps = append(d.MBps, from.MBps[len(from.MBps)-1])
		if len(from.CPUPerGB) > 0 {
			d.CPUPerGB = append(d.CPUPerGB, from.CPUPerGB[len(from.CPUPerGB)-1])
		}
	}
}

// cases are the measured cases, for the run.
func (m *minimalCases) cases() []report.Case {
	if m.cons == nil {
		return []report.Case{*m.prod}
	}
	return []report.Case{*m.prod, *m.cons}
}
