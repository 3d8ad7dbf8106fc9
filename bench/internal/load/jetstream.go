package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream maps the Kafka workloads onto NATS JetStream: a partition is
// a stream (R1, file storage) with one subject, a produce is an async
// publish (acknowledged once the server stored it: JetStream has one ack
// mode, which on one node matches acks=1), a consume is an ordered
// consumer reading the stream from its start.

// jsMaxPending bounds async publishes in flight per connection, as the
// Kafka producers' buffer bounds theirs.
const jsMaxPending = 4096

// StreamName is the JetStream stream of "partition" p of a topic.
func StreamName(topic string, p int) string { return fmt.Sprintf("%s-%d", topic, p) }

func subject(topic string, p int) string { return fmt.Sprintf("%s.%d", topic, p) }

// jsConn connects to the server at addr.
func jsConn(addr string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect("nats://"+addr, nats.Name("weir-bench"))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats at %s: %w", addr, err)
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream context: %w", err)
	}
	return nc, js, nil
}

// publish is an async publish that waits while the client has its
// maximum of publishes in flight: that is back-pressure (the Kafka
// producers block the same way on a full buffer), not a failure.
func publish(js jetstream.JetStream, subj string, data []byte) (jetstream.PubAckFuture, error) {
	for {
		f, err := js.PublishAsync(subj, data)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return f, err
		}
	}
}

// CreateStreams creates the streams of topic.
func CreateStreams(ctx context.Context, addr, topic string, partitions int) error {
	nc, js, err := jsConn(addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	for p := range partitions {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: StreamName(topic, p), Subjects: []string{subject(topic, p)},
			Storage: jetstream.FileStorage, Replicas: 1,
		})
		if err != nil {
			return fmt.Errorf("create stream %s: %w", StreamName(topic, p), err)
		}
	}
	return nil
}

// DeleteStreams deletes the streams of topic.
func DeleteStreams(ctx context.Context, addr, topic string, partitions int) error {
	nc, js, err := jsConn(addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	for p := range partitions {
		if err := js.DeleteStream(ctx, StreamName(topic, p)); err != nil {
			return fmt.Errorf("delete stream %s: %w", StreamName(topic, p), err)
		}
	}
	return nil
}

// ProduceJetStream publishes w to topic's streams, round robin over them,
// from w.Producers connections.
func ProduceJetStream(ctx context.Context, addr, topic string, w Workload, cpu CPUFunc) (Result, error) {
	var failed atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	onErr := jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
		failed.Add(1)
		errMu.Lock()
		firstErr = firstOf(firstErr, err)
		errMu.Unlock()
	})
	type conn struct {
		nc *nats.Conn
		js jetstream.JetStream
	}
	var conns []conn
	defer func() {
		for _, c := range conns {
			c.nc.Close()
		}
	}()
	for range w.Producers {
		nc, js, err := jsConn(addr, jetstream.WithPublishAsyncMaxPending(jsMaxPending), onErr)
		if err != nil {
			return Result{}, err
		}
		conns = append(conns, conn{nc, js})
	}
	budget := w.budget()
	var sentRecords atomic.Int64
	run, err := runProducers(w, cpu, nil, nil, func(i int, vals *values, deadline time.Time) {
		c := conns[i]
		var sent int64
		for n := i; time.Now().Before(deadline) && (budget == 0 || sent < budget) && ctx.Err() == nil; n++ {
			if _, err := publish(c.js, subject(topic, n%w.Partitions), vals.next()); err != nil {
				errMu.Lock()
				firstErr = firstOf(firstErr, err)
				errMu.Unlock()
				return
			}
			sent += int64(w.RecordSize)
			sentRecords.Add(1)
		}
		select {
		case <-c.js.PublishAsyncComplete():
		case <-ctx.Done():
		case <-time.After(time.Minute):
			errMu.Lock()
			firstErr = firstOf(firstErr, fmt.Errorf("%d async publishes unacknowledged after a minute", c.js.PublishAsyncPending()))
			errMu.Unlock()
		}
	})
	if err != nil {
		return Result{}, err
	}
	if firstErr != nil {
		return Result{}, fmt.Errorf("publish to %s: %d failed, first: %w", topic, failed.Load(), firstErr)
	}
	n := sentRecords.Load()
	return Result{Records: n, Bytes: n * int64(w.RecordSize), Elapsed: run.elapsed, CPU: run.broker, ClientCPU: run.clientCPU}, nil
}

// ConsumeJetStream reads every stream of topic from its start with an
// ordered consumer each.
func ConsumeJetStream(ctx context.Context, addr, topic string, partitions int, cpu CPUFunc) (Result, error) {
	nc, js, err := jsConn(addr)
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	var records, bytes atomic.Int64
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	m, err := startMeter(cpu)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	var lastNs atomic.Int64
	errs := make(chan error, partitions)
	for p := range partitions {
		go func() { errs <- readStream(cctx, js, StreamName(topic, p), &records, &bytes, &lastNs) }()
	}
	for range partitions {
		if err := <-errs; err != nil {
			return Result{}, err
		}
	}
	bcpu, ccpu, err := m.stop()
	if err != nil {
		return Result{}, err
	}
	return Result{Records: records.Load(), Bytes: bytes.Load(), Elapsed: time.Unix(0, lastNs.Load()).Sub(start), CPU: bcpu, ClientCPU: ccpu}, nil
}

// readStream reads every message stream holds now.
func readStream(ctx context.Context, js jetstream.JetStream, stream string, records, bytes, lastNs *atomic.Int64) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s info: %w", stream, err)
	}
	mine := int64(info.State.Msgs)
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return fmt.Errorf("ordered consumer of %s: %w", stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(jsMaxPending))
	if err != nil {
		return fmt.Errorf("messages of %s: %w", stream, err)
	}
	defer it.Stop()
	for got := int64(0); got < mine; got++ {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("read %s: %d of %d messages: %w", stream, got, mine, err)
		}
		records.Add(1)
		bytes.Add(int64(len(msg.Data())))
		lastNs.Store(time.Now().UnixNano())
	}
	return nil
}

// LatencyJetStream is LatencyKafka on one stream: paced async publishes,
// an ordered consumer in the same process.
func LatencyJetStream(ctx context.Context, addr, topic string, run LatencyRun) (LatencyResult, error) {
	var none LatencyResult
	nc, js, err := jsConn(addr, jetstream.WithPublishAsyncMaxPending(jsMaxPending))
	if err != nil {
		return none, err
	}
	defer nc.Close()
	cnc, cjs, err := jsConn(addr)
	if err != nil {
		return none, err
	}
	defer cnc.Close()
	cons, err := cjs.OrderedConsumer(ctx, StreamName(topic, 0), jetstream.OrderedConsumerConfig{})
	if err != nil {
		return none, fmt.Errorf("latency consumer: %w", err)
	}
	s := &samples{from: time.Now().Add(time.Hour)} // nothing counts before startAfter
	cc, err := cons.Consume(func(m jetstream.Msg) { s.add(m.Data(), time.Now()) })
	if err != nil {
		return none, fmt.Errorf("latency consume: %w", err)
	}
	defer cc.Stop()
	vals := newValues(randomPool(1), run.Size, 0)
	s.startAfter(run.Warmup)
	start := time.Now()
	var pubErr error
	sent := pace(ctx, run.Rate, run.Duration, func(now time.Time) {
		v := append([]byte(nil), vals.next()...)
		stamp(v, now)
		if _, err := publish(js, subject(topic, 0), v); err != nil && pubErr == nil {
			pubErr = err
		}
	})
	if pubErr != nil {
		return none, fmt.Errorf("latency publish: %w", pubErr)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		return none, fmt.Errorf("latency publish: %d unacknowledged after 30s", js.PublishAsyncPending())
	}
	if err := waitCount(ctx, s, sent, nil); err != nil {
		return none, err
	}
	return s.result(sent, start), nil
}
