package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/metrics"
	"github.com/weir-project/weir/internal/replication"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/storage"
)

// MetricsOptions configures the metrics listener (metrics.*).
type MetricsOptions struct {
	Addr           string // host:port to serve on; "" = off
	Pprof          bool   // metrics.pprof.enable
	PartitionLevel bool   // metrics.partition.level.enable
}

// eventObserver is told of the events the counters count, each at the
// one place that sees it: appends in produce.go, fetch responses in
// fetch.go (consumers' and followers' apart), committed ISR changes in
// cluster.go; followers' appends in package replication and log flushes
// in package storage, through their own observer interfaces.
type eventObserver interface {
	Produced(topic string, bytes, records int64)
	Fetched(topic string, bytes int64)
	ReplicatedOut(topic string, bytes int64)
	ISRChanged(before, after int)
	replication.Observer
	storage.FlushObserver
}

// noEvents is the observer when metrics are off.
type noEvents struct{}

func (noEvents) Produced(string, int64, int64) {}
func (noEvents) Fetched(string, int64)         {}
func (noEvents) ReplicatedOut(string, int64)   {}
func (noEvents) ISRChanged(int, int)           {}
func (noEvents) ReplicatedIn(string, int64)    {}
func (noEvents) LogFlushed(time.Duration)      {}

// events is the broker's observer (never nil).
func (b *Broker) events() eventObserver {
	if b.obs == nil {
		return noEvents{}
	}
	return b.obs
}

// storageObserver and replicationObserver are the observers the storage
// and replication packages are given: none when metrics are off, so that
// they do not even time what nobody counts.
func (b *Broker) storageObserver() storage.FlushObserver {
	if b.obs == nil {
		return nil
	}
	return b.obs
}

func (b *Broker) replicationObserver() replication.Observer {
	if b.obs == nil {
		return nil
	}
	return b.obs
}

// startMetrics binds and serves the metrics listener if one is
// configured. It returns the request observer for the servers (nil when
// off), the bound address, and the function that stops serving.
func (b *Broker) startMetrics() (server.RequestObserver, string, func() error, error) {
	mo := b.opts.Metrics
	if mo.Addr == "" {
		return nil, "", func() error { return nil }, nil
	}
	m := metrics.New(metrics.Options{State: b.metricsState, PartitionLevel: mo.PartitionLevel})
	b.obs = m
	ln, err := net.Listen("tcp", mo.Addr)
	if err != nil {
		return nil, "", nil, fmt.Errorf("listen metrics.listener on %s: %w", mo.Addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- metrics.Serve(ctx, ln, m.Handler(metrics.HandlerOptions{Ready: b.readiness, Pprof: mo.Pprof}))
	}()
	stop := func() error {
		cancel()
		return <-done
	}
	return m, ln.Addr().String(), stop, nil
}

// readiness is /readyz: ready once the logs are loaded, the broker is
// registered, caught up with the metadata log and unfenced, and serves
// clients; not ready again from the start of shutdown or when fenced.
func (b *Broker) readiness() error {
	if !b.ready.Load() {
		if b.live.Load() {
			return errors.New("starting: waiting to be unfenced, or shutting down")
		}
		return errors.New("starting: loading logs, registering, catching up with the metadata log")
	}
	st := b.lifecycle.Status()
	switch {
	case st.Fenced:
		return errors.New("fenced by the controller")
	case !st.CaughtUp:
		return errors.New("behind the metadata log")
	}
	return nil
}

// metricsState reads the current state for the gauges at each scrape.
func (b *Broker) metricsState() metrics.State {
	if !b.live.Load() {
		return metrics.State{}
	}
	var st metrics.State
	for _, tp := range b.replicas.Partitions() {
		p := b.replicas.Get(tp)
		if p == nil {
			continue
		}
		ps := p.State()
		log := p.Log()
		st.Partitions = append(st.Partitions, metrics.Partition{
			Topic: tp.Topic, Partition: tp.Partition, Leader: p.IsLeader(),
			Replicas: len(ps.Replicas), ISR: len(ps.ISR), MinISR: ps.MinISR,
			Size: log.Size(), Segments: log.NumSegments(), Producers: p.Producers().Len(),
			Unwritable: log.Refusing(),
		})
	}
	if !b.opts.BrokerOnly && b.meta.IsLeader() {
		st.ActiveController = true
		img := b.meta.Image()
		st.OfflinePartitions = len(img.OfflinePartitions())
		for _, br := range img.Brokers() {
			if br.Fenced {
				st.FencedBrokers++
			} else {
				st.ActiveBrokers++
			}
		}
	}
	st.Connections = b.clientSrv.OpenConnections()
	st.ConnectionsCreated = b.clientSrv.ConnectionsCreated()
	st.MemoryPoolUsed, st.MemoryPoolBudget = b.clientSrv.MemoryPool()
	if b.ctrlSrv != nil {
		for l, n := range b.ctrlSrv.OpenConnections() {
			st.Connections[l] += n
		}
		for l, n := range b.ctrlSrv.ConnectionsCreated() {
			st.ConnectionsCreated[l] += n
		}
	}
	st.WaitingProduces, st.WaitingFetches = b.waitingProduces.Load(), b.waitingFetches.Load()
	ls := b.logs.LoadStats()
	st.LogLoad = metrics.LogLoad{Seconds: ls.Duration.Seconds(), Logs: ls.Logs,
		RecoveredLogs: ls.RecoveredLogs, RecoveredSegments: ls.RecoveredSegments}
	gs := b.groups.Stats()
	st.GroupStates = gs.States
	for _, o := range gs.Offsets {
		// Lag against the end offset consumers see (the high
		// watermark), for the partitions led here: elsewhere this
		// broker's log may be behind.
		p := b.replicas.Get(storage.TopicPartition{Topic: o.Topic, Partition: o.Partition})
		if p == nil || !p.IsLeader() {
			continue
		}
		st.Lags = append(st.Lags, metrics.Lag{Group: o.Group, Topic: o.Topic, Partition: o.Partition,
			Lag: max(p.Offsets().HighWater-o.Offset, 0)})
	}
	return st
}

// countFetched counts the record bytes a fetch response carries, per
// topic, once the response is final (a long poll fills it again after
// each wake-up): a consumer's as bytes out, a follower's as replication
// bytes out, which Kafka keeps out of bytes out.
func (b *Broker) countFetched(f *fetchState) {
	obs := b.events()
	if _, off := obs.(noEvents); off {
		return
	}
	count := obs.Fetched
	if f.replicaID >= 0 {
		count = obs.ReplicatedOut
	}
	sizes := make([]int64, len(f.resp.Topics))
	for i, t := range f.resp.Topics {
		for _, p := range t.Partitions {
			sizes[i] += int64(len(p.RecordBatches))
		}
	}
	for _, at := range f.out.regions {
		sizes[at.topic] += at.region.Size()
	}
	var img *metadata.Image
	for i, t := range f.resp.Topics {
		if sizes[i] == 0 {
			continue
		}
		name := t.Topic
		if name == "" { // v13+ names topics by id
			if img == nil {
				img = b.meta.Image()
			}
			if tt := img.TopicByID(t.TopicID); tt != nil {
				name = tt.Name
			}
		}
		count(name, sizes[i])
	}
}
