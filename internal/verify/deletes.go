package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The deleter (process "d") deletes the head of a drawn partition of the
// judged topic every Options.DeleteInterval (DeleteRecords, as an
// operator or a retention tool would), then asks every partition's log
// start offset (ListOffsets, earliest). A deletion answered is one no
// failover may undo: a log start, or a final read, below the offset of a
// DeleteRecords completed before it began is a violation (resurrected).
//
// It deletes only what every assigned consumer has read and recorded, so
// that a record lost before its deletion is still found lost: the
// assigned consumers read past it without reading it.

// readProgress is how far each assigned consumer has read each partition
// of the judged topic.
type readProgress struct {
	mu        sync.Mutex
	consumers int
	next      map[string]map[int32]int64 // consumer -> partition -> next offset
}

func newReadProgress(consumers int) *readProgress {
	return &readProgress{consumers: consumers, next: map[string]map[int32]int64{}}
}

// advance notes the next offsets proc will read, after its poll is
// recorded.
func (r *readProgress) advance(proc string, next map[int32]kgo.EpochOffset) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.next[proc]
	if m == nil {
		m = map[int32]int64{}
		r.next[proc] = m
	}
	for p, eo := range next {
		m[p] = max(m[p], eo.Offset)
	}
}

// readByAll is the offset below which every assigned consumer has read
// partition p (0 until each has read some of it).
func (r *readProgress) readByAll(p int32) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.consumers == 0 || len(r.next) < r.consumers {
		return 0
	}
	low := int64(-1)
	for _, m := range r.next {
		if low < 0 || m[p] < low {
			low = m[p]
		}
	}
	return max(low, 0)
}

type deleter struct {
	topic   TopicInfo
	adm     *kadm.Client
	rec     *Recorder
	st      *stats
	read    *readProgress
	rng     *rand.Rand
	every   time.Duration
	deleted map[int32]int64 // the highest offset asked for, by partition
}

// run deletes every d.every and lists the log starts every second (or
// every d.every, if shorter): a failover that undid a deletion may be
// undone again by the next one, so it is looked for often.
func (d *deleter) run(ctx context.Context) {
	tick := time.NewTicker(min(d.every, time.Second))
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(last) >= d.every {
			last = time.Now()
			// Drawn whatever the consumers' pace: a seed makes the same draws.
			p := int32(d.rng.IntN(int(d.topic.Partitions)))
			if to := d.read.readByAll(p); to > d.deleted[p] {
				d.deleted[p] = to
				d.delete(ctx, p, to)
			}
		}
		d.listStarts(ctx)
	}
}

// delete asks for partition p's records below offset to be deleted. Any
// error leaves the outcome unknown (info): the leader raises its own log
// start before it waits for the others', so a deletion answered with a
// timeout, or cut short by a lost leadership, may still take effect.
func (d *deleter) delete(ctx context.Context, p int32, to int64) {
	d.rec.Add(Op{F: FDelete, Type: TInvoke, Proc: "d", Topic: d.topic.Name, Partition: p, Offset: to})
	offsets := kadm.Offsets{}
	offsets.AddOffset(d.topic.Name, p, to, -1)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := d.adm.DeleteRecords(cctx, offsets)
	if err == nil {
		if r, ok := res.Lookup(d.topic.Name, p); !ok {
			err = fmt.Errorf("%s-%d missing from the answer", d.topic.Name, p)
		} else if r.Err != nil {
			err = r.Err
		} else {
			d.rec.Add(Op{F: FDelete, Type: TOK, Proc: "d", Topic: d.topic.Name, Partition: p, Offset: to,
				Detail: fmt.Sprintf("low watermark %d", r.LowWatermark)})
			d.st.deletes.Add(1)
			return
		}
	}
	d.rec.Add(Op{F: FDelete, Type: TInfo, Proc: "d", Topic: d.topic.Name, Partition: p, Offset: to, Err: err.Error()})
}

// listStarts asks for every partition's log start offset; the partitions
// answered without error are recorded.
func (d *deleter) listStarts(ctx context.Context) {
	d.rec.Add(Op{F: FLogStart, Type: TInvoke, Proc: "d", Topic: d.topic.Name})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	listed, err := d.adm.ListStartOffsets(cctx, d.topic.Name)
	starts := map[int32]int64{}
	if err == nil {
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				starts[o.Partition] = o.Offset
			}
		})
	}
	if len(starts) == 0 {
		if err == nil {
			err = listed.Error()
		}
		d.rec.Add(Op{F: FLogStart, Type: TInfo, Proc: "d", Topic: d.topic.Name, Err: fmt.Sprint(err)})
		return
	}
	d.rec.Add(Op{F: FLogStart, Type: TOK, Proc: "d", Topic: d.topic.Name, Offsets: starts})
}
