package load

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The latency client reuses its memory. At half of a broker's peak it
// moves 200 MB/s through one process; allocating a record and value per
// send and a record slice per fetched batch made it collect garbage 30
// times a second, CPU taken from the cores the broker shares with it.
// Pooling halves the client's allocation; what is left is mostly
// franz-go's fetch-response buffers, which it does not let us pool.

// recordPool hands out producer records with a value of one size. A
// record goes back once its promise has run: the client no longer holds
// it then.
type recordPool struct {
	size int
	p    sync.Pool
}

func newRecordPool(size int) *recordPool { return &recordPool{size: size} }

func (rp *recordPool) get() *kgo.Record {
	if r, ok := rp.p.Get().(*kgo.Record); ok {
		return r
	}
	return &kgo.Record{Value: make([]byte, rp.size)}
}

func (rp *recordPool) put(r *kgo.Record) {
	*r = kgo.Record{Value: r.Value[:rp.size]}
	rp.p.Put(r)
}

// fetchedRecords is a kgo.PoolRecords: the consumer decodes each batch
// into a slice from here and gives it back once every record of it has
// been recycled.
type fetchedRecords struct {
	mu   sync.Mutex
	free [][]kgo.Record
}

var _ kgo.PoolRecords = (*fetchedRecords)(nil)

func (f *fetchedRecords) GetRecords(n int) []kgo.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.free) - 1; i >= 0; i-- {
		if s := f.free[i]; cap(s) >= n {
			f.free[i] = f.free[len(f.free)-1]
			f.free = f.free[:len(f.free)-1]
			return s[:0]
		}
	}
	return make([]kgo.Record, 0, n)
}

func (f *fetchedRecords) PutRecords(s []kgo.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.free) < 64 {
		f.free = append(f.free, s)
	}
}
