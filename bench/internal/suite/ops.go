package suite

import (
	"context"
	"fmt"
	"time"

	"github.com/weir-project/weir/bench/internal/hostmem"
	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
)

// The operations of a measurement, the same call for every broker: Kafka
// brokers through franz-go, JetStream through nats.go.

func isNATS(b *peer.Broker) bool { return b.Name == peer.JetStream }

// opTimeout bounds one admin operation.
const opTimeout = 2 * time.Minute

func createTopic(ctx context.Context, b *peer.Broker, topic string, partitions, rf int, configs map[string]*string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if isNATS(b) {
		return load.CreateStreams(ctx, b.Addrs[0], topic, partitions)
	}
	adm, err := load.NewAdmin(b.Addrs)
	if err != nil {
		return err
	}
	defer adm.Close()
	return adm.CreateTopic(ctx, topic, partitions, rf, configs)
}

func deleteTopic(ctx context.Context, b *peer.Broker, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if isNATS(b) {
		return load.DeleteStreams(ctx, b.Addrs[0], topic, partitions)
	}
	adm, err := load.NewAdmin(b.Addrs)
	if err != nil {
		return err
	}
	defer adm.Close()
	return adm.DeleteTopic(ctx, topic)
}

// produce runs w on b's topic; warm is how many uncounted warm-up records
// are in the topic too. The memory warm-up, when set, comes first, never
// more than a quarter of the memory available, so it cannot push the
// brokers' page cache or heaps out.
func (s *Suite) produce(ctx context.Context, b *peer.Broker, topic string, w load.Workload) (load.Result, int64, error) {
	s.warm(b.Name)
	if isNATS(b) {
		res, err := load.ProduceJetStream(ctx, b.Addrs[0], topic, w, b.CPU)
		return res, 0, err
	}
	return load.ProduceKafka(ctx, b.Addrs, topic, w, b.CPU)
}

// warm touches and frees memory before a run that writes into fresh
// page cache, when the run is set to (see hostmem); who names the run in
// a note if it fails.
func (s *Suite) warm(who string) {
	n := s.cfg.Warm
	if n <= 0 {
		return
	}
	if avail, err := meminfo("MemAvailable"); err == nil {
		n = min(n, avail/4)
	}
	if err := hostmem.Warm(int(n)); err != nil {
		s.note("%s: %v", who, err)
	}
}

// consume reads the whole topic (want records) from its start.
func consume(ctx context.Context, b *peer.Broker, topic string, partitions int, want int64) (load.Result, error) {
	var res load.Result
	var err error
	if isNATS(b) {
		res, err = load.ConsumeJetStream(ctx, b.Addrs[0], topic, partitions, b.CPU)
	} else {
		res, err = load.ConsumeKafka(ctx, b.Addrs, topic, want, b.CPU)
	}
	if err == nil && res.Records != want {
		err = fmt.Errorf("consumed %d records of %s, %d were acknowledged", res.Records, topic, want)
	}
	return res, err
}
