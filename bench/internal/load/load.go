// Package load drives the brokers with real clients: franz-go (kgo) for
// weir and kfake, nats.go for JetStream. Every workload runs the same way
// on every broker: produce for a fixed time (or byte budget) as fast as
// the client goes, consume what is there, or produce at a fixed rate and
// measure end-to-end latency.
package load

import (
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-project/weir/bench/internal/proc"
)

// Workload is what a produce run sends.
type Workload struct {
	RecordSize int           // value bytes of each record (no key)
	Partitions int           // Kafka partitions; JetStream: streams
	Producers  int           // concurrent producer clients
	Acks       int           // 1, or -1 (idempotent producer)
	Duration   time.Duration // produce for this long...
	MaxBytes   int64         // ...or until this many value bytes are sent, whichever first (0: no cap)
	Sample     time.Duration // if set, the acknowledged rate is sampled this often (Result.Timeline)
}

// budget is each producer's share of MaxBytes (0: no cap).
func (w Workload) budget() int64 {
	if w.MaxBytes <= 0 {
		return 0
	}
	return w.MaxBytes / int64(w.Producers)
}

// CPUFunc reads the broker's CPU time so far (utime+stime).
type CPUFunc func() (time.Duration, error)

// meter reads the broker's CPU and this process's, which is the
// clients': the suite runs one load at a time and does nothing else
// meanwhile.
type meter struct {
	cpu            CPUFunc
	broker0, self0 time.Duration
}

func startMeter(cpu CPUFunc) (*meter, error) {
	b, err := cpu()
	if err != nil {
		return nil, err
	}
	self, err := proc.CPU(os.Getpid())
	if err != nil {
		return nil, err
	}
	return &meter{cpu: cpu, broker0: b, self0: self}, nil
}

// stop returns the broker's and the clients' CPU since startMeter.
func (m *meter) stop() (broker, client time.Duration, err error) {
	self, err := proc.CPU(os.Getpid())
	if err != nil {
		return 0, 0, err
	}
	b, err := m.cpu()
	if err != nil {
		return 0, 0, err
	}
	return b - m.broker0, self - m.self0, nil
}

// timedRun is what runProducers measured around the producers.
type timedRun struct {
	elapsed           time.Duration // first send to the last producer's return
	broker, clientCPU time.Duration // over elapsed
}

// runProducers runs one goroutine per producer, each given its own
// values out of one fresh random pool and the run's deadline, between
// the start and the stop of the CPU meter and the clock, and with *acked
// (bytes) sampled into timeline every w.Sample when acked is not nil. It
// returns once every producer has.
func runProducers(w Workload, cpu CPUFunc, acked *atomic.Int64, timeline *[]float64, each func(i int, vals *values, deadline time.Time)) (timedRun, error) {
	pool := randomPool(uint64(time.Now().UnixNano()))
	m, err := startMeter(cpu)
	if err != nil {
		return timedRun{}, err
	}
	start := time.Now()
	deadline := start.Add(w.Duration)
	stopSampling := func() {}
	if acked != nil {
		stopSampling = sample(w.Sample, acked, timeline)
	}
	var wg sync.WaitGroup
	for i := range w.Producers {
		wg.Go(func() { each(i, newValues(pool, w.RecordSize, i*(poolSize/w.Producers)), deadline) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopSampling()
	b, c, err := m.stop()
	if err != nil {
		return timedRun{}, err
	}
	return timedRun{elapsed: elapsed, broker: b, clientCPU: c}, nil
}

// Result is one measured run.
type Result struct {
	Records, Bytes int64         // acknowledged (produce) or received (consume) value bytes
	Elapsed        time.Duration // first send to last acknowledgement, or first poll to last record
	CPU            time.Duration // broker CPU over Elapsed
	ClientCPU      time.Duration // this process's (the clients') CPU over Elapsed
	BatchBytes     float64       // mean produce batch (records' bytes) the client sent, Kafka only
	Timeline       []float64     // MB/s acknowledged in each Workload.Sample interval
}

// sample appends to out the rate of *counter (bytes) every interval until
// the returned stop is called; interval 0 does nothing.
func sample(interval time.Duration, counter *atomic.Int64, out *[]float64) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		last, lastT := counter.Load(), time.Now()
		for {
			select {
			case now := <-t.C:
				n := counter.Load()
				*out = append(*out, float64(n-last)/1e6/now.Sub(lastT).Seconds())
				last, lastT = n, now
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// poolSize is the random bytes values are cut from: far more than a CPU
// cache, so no broker or compressor sees repeating values.
const poolSize = 8 << 20

// randomPool returns poolSize random bytes.
func randomPool(seed uint64) []byte {
	r := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)}))
	p := make([]byte, poolSize)
	for i := 0; i+8 <= len(p); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return p
}

// values hands out record values of one size as slices of the pool at
// moving offsets (no allocation per record).
type values struct {
	pool []byte
	size int
	off  int
}

func newValues(pool []byte, size, start int) *values {
	return &values{pool: pool, size: size, off: start % (len(pool) - size)}
}

func (v *values) next() []byte {
	b := v.pool[v.off : v.off+v.size]
	v.off = (v.off + 4099) % (len(v.pool) - v.size)
	return b
}
