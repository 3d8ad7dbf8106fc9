package verify

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// stats are the live counters behind the progress line, and what the
// nemesis waits on (acknowledgements of one partition).
type stats struct {
	invoked, acked, failed atomic.Int64
	polled, commits        atomic.Int64
	deletes                atomic.Int64

	mu   sync.Mutex
	acks map[int32][]ackMark // acks=all topic (or the unsafe run's main topic)
}

// ackMark is one acknowledged send: when it was invoked, where it landed.
type ackMark struct {
	invoked float64
	offset  int64
}

func newStats() *stats { return &stats{acks: map[int32][]ackMark{}} }

func (s *stats) ack(p int32, invoked float64, offset int64) {
	s.mu.Lock()
	s.acks[p] = append(s.acks[p], ackMark{invoked, offset})
	s.mu.Unlock()
}

// acksSince counts partition p's acknowledged sends invoked at or after t,
// and returns the highest offset acknowledged on p at all (-1: none).
func (s *stats) acksSince(p int32, t float64) (n int, maxOffset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maxOffset = -1
	for _, a := range s.acks[p] {
		if a.invoked >= t {
			n++
		}
		maxOffset = max(maxOffset, a.offset)
	}
	return n, maxOffset
}

// producer sends unique values to random partitions of one topic at a
// steady pace, recording every send's invocation and outcome.
type producer struct {
	name       string
	topic      string
	partitions int32
	main       bool // counted in stats.acks
	cl         *kgo.Client
	rng        *rand.Rand
	rec        *Recorder
	st         *stats
	seq        int64
}

// producerOpts are the client options of a producer with the given acks.
func producerOpts(acksAll bool) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.RecordDeliveryTimeout(30 * time.Second),
		kgo.MaxBufferedRecords(2000),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if acksAll {
		return append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	return append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
}

// run sends one value every pace until ctx ends; sends already invoked
// complete through their callbacks (sendCtx bounds them).
func (p *producer) run(ctx, sendCtx context.Context, pace time.Duration) {
	tick := time.NewTicker(pace)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v := FormatValue(p.name, p.seq)
		p.seq++
		part := p.rng.Int32N(p.partitions)
		invoked := p.rec.Now()
		p.rec.Add(Op{F: FSend, Type: TInvoke, Proc: p.name, Topic: p.topic, Value: v, Partition: part})
		p.st.invoked.Add(1)
		p.cl.Produce(sendCtx, &kgo.Record{Topic: p.topic, Partition: part, Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err != nil {
				// Whether a failed send was written is unknown to the
				// client in general (a timeout, a lost answer): info.
				p.rec.Add(Op{F: FSend, Type: TInfo, Proc: p.name, Topic: p.topic, Value: v, Partition: part, Err: err.Error()})
				p.st.failed.Add(1)
				return
			}
			p.rec.Add(Op{F: FSend, Type: TOK, Proc: p.name, Topic: p.topic, Value: v, Partition: r.Partition, Offset: r.Offset})
			p.st.acked.Add(1)
			if p.main {
				p.st.ack(r.Partition, invoked, r.Offset)
			}
		})
	}
}
