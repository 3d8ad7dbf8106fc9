package load

import (
	"context"
	"encoding/binary"
	"sync"
	"time"
)

// LatencyRun is a fixed-rate run: records of Size bytes at Rate records
// per second for Duration; the first Warmup of samples are dropped.
type LatencyRun struct {
	Size     int
	Rate     float64 // records/s; +Inf sends as fast as the client takes them
	Duration time.Duration
	Warmup   time.Duration
}

// LatencyResult is one latency run.
type LatencyResult struct {
	Samples []time.Duration // send to receive, of each record sent after the warm-up
	Sent    int64
	Elapsed time.Duration // from the first send until the last record arrived
}

// Throughput is the records per second that went through producer, broker
// and consumer together: the end-to-end rate the three sustain.
func (r LatencyResult) Throughput() float64 { return float64(r.Sent) / r.Elapsed.Seconds() }

// stamp writes the send time into the first 8 bytes of v.
func stamp(v []byte, t time.Time) { binary.BigEndian.PutUint64(v, uint64(t.UnixNano())) }

// sinceStamp is how long ago the value was stamped.
func sinceStamp(v []byte, now time.Time) time.Duration {
	if len(v) < 8 {
		return -1
	}
	return now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(v))))
}

// pace calls send for record i at start + i/rate, sleeping only when at
// least a millisecond ahead (fast rates go out in small bursts), until
// duration passes or ctx ends. It returns the records sent.
func pace(ctx context.Context, rate float64, duration time.Duration, send func(now time.Time)) int64 {
	start := time.Now()
	var i int64
	for ctx.Err() == nil {
		due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		now := time.Now()
		if now.Sub(start) >= duration {
			break
		}
		if ahead := due.Sub(now); ahead >= time.Millisecond {
			time.Sleep(ahead)
			continue
		}
		send(now)
		i++
	}
	return i
}

// samples collects latencies from the consumer's goroutines.
type samples struct {
	mu   sync.Mutex
	from time.Time // samples of records sent before this are warm-up (set by startAfter)
	ds   []time.Duration
	n    int64
	last time.Time // when the latest record arrived
}

func (s *samples) add(v []byte, now time.Time) {
	d := sinceStamp(v, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.last = now
	if now.Add(-d).Before(s.from) {
		return
	}
	s.ds = append(s.ds, d)
}

// startAfter sets the warm-up: samples of records sent before now+d are
// dropped. Called just before the producer starts.
func (s *samples) startAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.from = time.Now().Add(d)
}

func (s *samples) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// result is what the samples hold once every record sent since start has
// arrived.
func (s *samples) result(sent int64, start time.Time) LatencyResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return LatencyResult{Samples: s.ds, Sent: sent, Elapsed: s.last.Sub(start)}
}
