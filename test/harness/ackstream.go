package harness

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// AckLog records what a producer was told: each acknowledged value's
// offset and the time of its acknowledgement, and every failure. It is
// the one record of acknowledgements the data-loss checks
// (CheckExactlyOnce) compare the logs against.
type AckLog struct {
	mu     sync.Mutex
	offset map[string]int64
	ackAt  []time.Time // in acknowledgement order
	failed []string
	ch     chan struct{} // poked on every answer
}

// NewAckLog returns an empty log.
func NewAckLog() *AckLog {
	return &AckLog{offset: map[string]int64{}, ch: make(chan struct{}, 1)}
}

// Record is a kgo promise: it records r's acknowledgement or failure.
func (l *AckLog) Record(r *kgo.Record, err error) {
	if err != nil {
		l.Fail(fmt.Sprintf("%s: %v", r.Value, err))
		return
	}
	l.Ack(string(r.Value), r.Offset)
}

// Ack records that value v was acknowledged at offset off; -1 when the
// client did not say where (librdkafka's implicit acknowledgement of a
// batch retried after a timeout, once a later one succeeded).
func (l *AckLog) Ack(v string, off int64) {
	l.mu.Lock()
	l.offset[v] = off
	l.ackAt = append(l.ackAt, time.Now())
	l.mu.Unlock()
	l.poke()
}

// Fail records a failed record (or any problem the producer reported).
func (l *AckLog) Fail(what string) {
	l.mu.Lock()
	l.failed = append(l.failed, what)
	l.mu.Unlock()
	l.poke()
}

func (l *AckLog) poke() {
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

// Count is the number of acknowledged values.
func (l *AckLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.offset)
}

// Failed returns the failures recorded so far.
func (l *AckLog) Failed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failed)
}

// Offsets returns a copy of the acknowledged offset of every value.
func (l *AckLog) Offsets() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int64, len(l.offset))
	for v, off := range l.offset {
		out[v] = off
	}
	return out
}

// RequireNoFailures fails the test if any record failed.
func (l *AckLog) RequireNoFailures(t testing.TB, what string) {
	t.Helper()
	if failed := l.Failed(); len(failed) > 0 {
		t.Fatalf("%s: %d records failed, first: %s", what, len(failed), failed[0])
	}
}

// WaitAcks waits until n values are acknowledged in all, failing the
// test at once if a record fails instead.
func (l *AckLog) WaitAcks(t testing.TB, n int, timeout time.Duration, what string) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.RequireNoFailures(t, what)
		got := l.Count()
		if got >= n {
			return
		}
		select {
		case <-l.ch:
		case <-deadline.C:
			t.Fatalf("%s: %d of %d records acknowledged within %v", what, got, n, timeout)
		}
	}
}

// WaitMore waits for n acknowledgements more than there are now.
func (l *AckLog) WaitMore(t testing.TB, n int, timeout time.Duration, what string) {
	t.Helper()
	l.WaitAcks(t, l.Count()+n, timeout, what)
}

// LongestGap is the longest time between consecutive acknowledgements
// that arrived in [from, to], counting from `from` to the first of them
// too, and when that gap ended.
func (l *AckLog) LongestGap(from, to time.Time) (gap time.Duration, endedAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := from
	for _, at := range l.ackAt {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		if d := at.Sub(prev); d > gap {
			gap, endedAt = d, at
		}
		prev = at
	}
	return gap, endedAt
}

// MaxGap is the longest time between two consecutive acknowledgements.
func (l *AckLog) MaxGap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(l.ackAt); i++ {
		gap = max(gap, l.ackAt[i].Sub(l.ackAt[i-1]))
	}
	return gap
}

// AcksBetween counts the acknowledgements that arrived in [from, to].
func (l *AckLog) AcksBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.ackAt {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// StreamConfig describes an AckStream.
type StreamConfig struct {
	Topic     string
	Partition int32
	// Prefix, when set, makes the values "<Prefix>-0", "<Prefix>-1", ...;
	// otherwise they are "0", "1", ...
	Prefix string
	Pace   time.Duration // one record every Pace
	// Records, when positive, ends the stream after that many values
	// (Done closes); otherwise it runs until Finish or Stop.
	Records int
	// Client produces; nil means an idempotent acks=all client of the
	// cluster (see StartAckStream).
	Client *kgo.Client
}

// AckStream is a producer writing numbered values to one partition, one
// every Pace, recording every answer in its AckLog. A stream that runs
// until told to stop cannot finish before the fault a test injects is
// over, however slow the machine.
type AckStream struct {
	*AckLog
	t    testing.TB
	cfg  StreamConfig
	cl   *kgo.Client
	stop chan struct{}
	done chan struct{}
	sent int // values handed to the client; read after done
}

// StartAckStream starts a stream on c. Without cfg.Client it produces
// through an idempotent acks=all franz-go client with a 2 ms linger and
// minutes of delivery and retry timeout (a failover must cost a retry,
// never a record), with opts last.
func StartAckStream(t testing.TB, c *Cluster, cfg StreamConfig, opts ...kgo.Opt) *AckStream {
	t.Helper()
	cl := cfg.Client
	if cl == nil {
		// The client's own log, shown if the test fails: a stalled
		// stream is told apart from a stalled broker by it.
		clientLog := &lockedBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				out := clientLog.String()
				t.Logf("stream producer log (tail):\n%s", out[max(0, len(out)-16<<10):])
			}
		})
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(clientLog, kgo.LogLevelInfo, nil)))
		cl = c.Client(append([]kgo.Opt{
			kgo.DefaultProduceTopic(cfg.Topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(2 * time.Millisecond),
			kgo.RecordDeliveryTimeout(4 * time.Minute),
			kgo.RetryTimeout(4 * time.Minute),
		}, opts...)...)
	}
	s := &AckStream{AckLog: NewAckLog(), t: t, cfg: cfg, cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	ctx := Ctx(t, 15*time.Minute)
	go func() {
		defer close(s.done)
		tick := time.NewTicker(cfg.Pace)
		defer tick.Stop()
		for i := 0; cfg.Records <= 0 || i < cfg.Records; i++ {
			select {
			case <-s.stop:
				s.sent = i
				return
			case <-tick.C:
			}
			r := &kgo.Record{Topic: cfg.Topic, Partition: cfg.Partition, Value: []byte(s.value(i))}
			// franz-go calls back in order within a partition.
			cl.Produce(ctx, r, s.Record)
		}
		s.sent = cfg.Records
	}()
	t.Cleanup(func() {
		s.halt()
		<-s.done
	})
	return s
}

func (s *AckStream) value(i int) string {
	if s.cfg.Prefix != "" {
		return s.cfg.Prefix + "-" + strconv.Itoa(i)
	}
	return strconv.Itoa(i)
}

func (s *AckStream) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
}

// Done is closed once a stream of cfg.Records values has handed out the
// last one (or was stopped).
func (s *AckStream) Done() <-chan struct{} { return s.done }

// Stop stops producing and waits for every answer; it returns how many
// values were sent. It fails the test only if the answers do not come;
// failed records stay in the log for the caller to judge (acks=1 streams
// may lose records by design).
func (s *AckStream) Stop() int {
	s.t.Helper()
	s.halt()
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := s.cl.Flush(ctx); err != nil {
		s.t.Fatalf("flush the stream: %v (%d of %d acknowledged)", err, s.Count(), s.sent)
	}
	return s.sent
}

// Finish stops producing, waits for every answer, fails the test unless
// every value sent was acknowledged, and returns how many were sent.
func (s *AckStream) Finish() int {
	s.t.Helper()
	n := s.Stop()
	s.RequireNoFailures(s.t, "the stream")
	if got := s.Count(); got != n {
		s.t.Fatalf("%d of %d records acknowledged", got, n)
	}
	return n
}

// CheckExactlyOnce reads the stream's partition back through addrs (see
// the function CheckExactlyOnce).
func (s *AckStream) CheckExactlyOnce(addrs []string, base int64) int {
	s.t.Helper()
	return checkExactlyOnce(s.t, addrs, s.cfg.Topic, s.cfg.Partition, base, s.value, s.AckLog)
}

// CheckExactlyOnce reads a partition back through addrs and checks that
// it holds the values "0", "1", ... in order, each exactly once, from
// offset base (its log end before the producer began) to its end, and
// that every value in acks is where its acknowledgement said. It returns
// how many values the partition holds from base.
func CheckExactlyOnce(t testing.TB, addrs []string, topic string, partition int32, base int64, acks *AckLog) int {
	t.Helper()
	return checkExactlyOnce(t, addrs, topic, partition, base, strconv.Itoa, acks)
}

func checkExactlyOnce(t testing.TB, addrs []string, topic string, partition int32, base int64, value func(int) string, acks *AckLog) int {
	t.Helper()
	got := PartitionValues(t, addrs, topic, partition)
	end := base
	for off := range got {
		end = max(end, off+1)
	}
	for off := base; off < end; off++ {
		want := value(int(off - base))
		if v, ok := got[off]; !ok || v != want {
			t.Fatalf("%s-%d: offset %d holds %q, want %q (a record lost, duplicated or reordered; %d stored)", topic, partition, off, v, want, len(got))
		}
	}
	for v, off := range acks.Offsets() {
		if off < 0 {
			continue // acknowledged without its offset; checked in order above
		}
		if got[off] != v {
			t.Fatalf("%s-%d: %s acknowledged at offset %d, but the log holds %q there", topic, partition, v, off, got[off])
		}
	}
	n := int(end - base)
	if acked := acks.Count(); n < acked {
		t.Fatalf("%s-%d: %d records read back, %d acknowledged", topic, partition, n, acked)
	}
	return n
}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
