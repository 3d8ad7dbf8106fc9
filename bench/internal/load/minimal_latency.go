package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// LatencyMinimal is LatencyKafka with the minimal client: the same
// records at the same rate to topic (1 partition, acks=1) on the broker
// at addr, and a consumer on a second connection reading them back. The
// producer sends at once whatever is due (no linger) whenever fewer than
// five Produce requests are in flight, so records due while the five are
// out go together in the next one, as any producer's do. The consumer
// keeps one Fetch in flight, asking for one byte at least and waiting at
// most 500 ms (Kafka's defaults), and takes each record's latency when
// its response has been read and checked.
func LatencyMinimal(ctx context.Context, addr, topic string, run LatencyRun) (LatencyResult, error) {
	var none LatencyResult
	prod, err := dialMinimal(addr)
	if err != nil {
		return none, err
	}
	defer prod.Close()
	cons, err := dialMinimal(addr)
	if err != nil {
		return none, err
	}
	defer cons.Close()
	vals := newValues(randomPool(1), max(run.Size, 8), 0)
	// One record first, acknowledged before the clock starts: the topic
	// is served and both connections are up.
	warm := newLatencyProducer(ctx, prod, topic, vals)
	warm.due(time.Now())
	if err := warm.close(); err != nil {
		return none, fmt.Errorf("latency warm-up: %w", err)
	}

	s := &samples{from: time.Now().Add(time.Hour)} // nothing counts before startAfter
	done := make(chan error, 1)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { done <- cons.consumeLatency(cctx, topic, s) }()

	lp := newLatencyProducer(ctx, prod, topic, vals)
	s.startAfter(run.Warmup)
	start := time.Now()
	sent := pace(ctx, run.Rate, run.Duration, lp.due)
	if err := lp.close(); err != nil {
		return none, fmt.Errorf("latency produce: %w", err)
	}
	// The warm-up record and every sent one must arrive.
	if err := waitCount(ctx, s, sent+1, done); err != nil {
		return none, err
	}
	return s.result(sent, start), nil
}

// latencyProducer sends the records pace makes due. due only queues a
// record's send time; one goroutine builds and writes the requests, a
// second reads their responses in order.
type latencyProducer struct {
	c     *minConn
	topic string
	vals  *values // value bytes, each stamped with its send time

	mu      sync.Mutex
	pending []time.Time // send times of records due and not yet sent
	closed  bool        // send what is pending, then stop
	err     error
	wake    chan struct{} // a record is due, or the producer closes

	inflight chan struct{} // one token per request in flight
	sentReqs chan struct{} // one per request written, for the reader
	all      sync.WaitGroup
}

func newLatencyProducer(ctx context.Context, c *minConn, topic string, vals *values) *latencyProducer {
	lp := &latencyProducer{c: c, topic: topic, vals: vals, wake: make(chan struct{}, 1),
		inflight: make(chan struct{}, minimalInFlight), sentReqs: make(chan struct{}, minimalInFlight)}
	lp.all.Add(2)
	go lp.write(ctx)
	go lp.read()
	return lp
}

// due queues a record sent at now.
func (lp *latencyProducer) due(now time.Time) {
	lp.mu.Lock()
	lp.pending = append(lp.pending, now)
	lp.mu.Unlock()
	lp.poke()
}

func (lp *latencyProducer) poke() {
	select {
	case lp.wake <- struct{}{}:
	default:
	}
}

// close sends what is due, waits for every response and stops.
func (lp *latencyProducer) close() error {
	lp.mu.Lock()
	lp.closed = true
	lp.mu.Unlock()
	lp.poke()
	lp.all.Wait()
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.err == nil && len(lp.pending) > 0 {
		return fmt.Errorf("%d records left unsent", len(lp.pending))
	}
	return lp.err
}

func (lp *latencyProducer) fail(err error) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.err == nil {
		lp.err = err
	}
}

// write sends every due record, up to a batch's worth per request, as
// soon as a request slot is free, until the producer closes with nothing
// pending, fails, or ctx ends.
func (lp *latencyProducer) write(ctx context.Context) {
	defer lp.all.Done()
	defer close(lp.sentReqs)
	size := lp.vals.size
	perBatch := recordsPerBatch(size)
	var buf []byte
	var stamps []int64
	for {
		lp.mu.Lock()
		n := min(len(lp.pending), perBatch)
		closed, failed := lp.closed, lp.err != nil
		stamps = stamps[:0]
		for _, t := range lp.pending[:n] {
			stamps = append(stamps, t.UnixNano())
		}
		lp.pending = lp.pending[n:]
		if len(lp.pending) == 0 {
			lp.pending = lp.pending[:0:cap(lp.pending)] // reuse it from its start
		}
		lp.mu.Unlock()
		if failed {
			return
		}
		if n == 0 {
			if closed {
				return
			}
			select {
			case <-lp.wake:
			case <-ctx.Done():
				lp.fail(ctx.Err())
				return
			}
			continue
		}
		lp.inflight <- struct{}{} // the reader frees one per response, even after a failure
		now := time.Now().UnixMilli()
		buf = lp.c.produceRequest(buf[:0], lp.topic, 0, 1, func(dst []byte) []byte {
			return appendBatch(dst, lp.vals, n, size, producerID{id: -1, epoch: -1}, -1, now, stamps)
		}, batchLen(n, size))
		lp.sentReqs <- struct{}{}
		if err := lp.c.write(buf); err != nil {
			lp.fail(err)
			return
		}
	}
}

// read takes the responses in order, freeing a request slot for each.
// After a failure it only frees the slots, so the writer never blocks.
func (lp *latencyProducer) read() {
	defer lp.all.Done()
	resp := kmsg.NewPtrProduceResponse()
	failed := false
	for range lp.sentReqs {
		if !failed {
			resp.Default()
			resp.Version = minProduceVersion
			err := lp.c.c.SetReadDeadline(time.Now().Add(minimalIdle)) // a broker that stops answering fails the run
			if err == nil {
				err = lp.c.response(resp)
			}
			if err == nil {
				err = produceErr(resp, 0)
			}
			if err != nil {
				lp.fail(err)
				failed = true
			}
		}
		<-lp.inflight
	}
}

// consumeLatency fetches partition 0 of topic from its start until ctx
// ends, adding every record's latency to s.
func (c *minConn) consumeLatency(ctx context.Context, topic string, s *samples) error {
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Now()) })
	defer stop()
	req := fetchRequest(topic, 1)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	offsets := []int64{0}
	var res Result
	for ctx.Err() == nil {
		req.Topics[0].Partitions[0].FetchOffset = offsets[0]
		if err := c.request(req); err != nil {
			return err
		}
		resp.Default()
		resp.Version = minFetchVersion
		if err := c.response(resp); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		if _, err := takeFetch(resp, offsets, &res, func(v []byte) { s.add(v, now) }); err != nil {
			return fmt.Errorf("consume %s: %w", topic, err)
		}
	}
	return nil
}
