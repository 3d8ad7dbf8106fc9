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

// workload is the running producers and consumers.
type workload struct {
	o      Options
	e      *env
	topics []TopicInfo
	rec    *Recorder
	st     *stats

	ctx                  context.Context // ends when the run is cut short
	prodCtx, consCtx     context.Context
	stopProd, stopCons   context.CancelFunc
	sendCtx              context.Context
	cancelSends          context.CancelFunc
	prodWG, consWG       sync.WaitGroup
	producers, consumers []*kgo.Client
	producerList         []*producer
}

func (w *workload) client(name string, opts ...kgo.Opt) (*kgo.Client, error) {
	all := append([]kgo.Opt{
		kgo.SeedBrokers(w.e.bootstrap...),
		kgo.ClientID("weir-verify-" + name),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
		kgo.DialTimeout(3 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", name, err)
	}
	return cl, nil
}

func startWorkload(ctx context.Context, o Options, e *env, topics []TopicInfo, rec *Recorder, st *stats) (_ *workload, err error) {
	w := &workload{o: o, e: e, topics: topics, rec: rec, st: st, ctx: ctx}
	w.prodCtx, w.stopProd = context.WithCancel(ctx)
	w.consCtx, w.stopCons = context.WithCancel(ctx)
	w.sendCtx, w.cancelSends = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			w.stopProducers(true)
			w.stopConsumers()
			w.close()
		}
	}()
	main := topics[0]
	pace := time.Duration(o.Producers) * time.Second / time.Duration(o.Rate)
	addProducer := func(name string, t TopicInfo, isMain bool, i int) error {
		cl, err := w.client(name, producerOpts(t.Acks == "all")...)
		if err != nil {
			return err
		}
		w.producers = append(w.producers, cl)
		p := &producer{name: name, topic: t.Name, partitions: t.Partitions, main: isMain, cl: cl,
			rng: rand.New(rand.NewPCG(uint64(o.Seed), uint64(i+1))), rec: rec, st: st}
		w.producerList = append(w.producerList, p)
		w.prodWG.Add(1)
		go func() {
			defer w.prodWG.Done()
			p.run(w.prodCtx, w.sendCtx, pace)
		}()
		return nil
	}
	for i := range o.Producers {
		if err := addProducer(fmt.Sprintf("p%d", i+1), main, true, i); err != nil {
			return nil, err
		}
	}
	for i, t := range topics[1:] {
		if err := addProducer(fmt.Sprintf("q%d", i+1), t, false, 100+i); err != nil {
			return nil, err
		}
	}
	read := newReadProgress(o.Assigned)
	for i := range o.Assigned {
		name := fmt.Sprintf("a%d", i+1)
		cl, err := w.client(name, append(consumerOpts(), kgo.ConsumePartitions(allFromStart(topics)))...)
		if err != nil {
			return nil, err
		}
		w.consumers = append(w.consumers, cl)
		w.consWG.Add(1)
		go func() {
			defer w.consWG.Done()
			runAssigned(w.consCtx, cl, rec, st, name, main.Name, read)
		}()
	}
	if o.Assigned > 0 && o.DeleteInterval > 0 {
		cl, err := w.client("d")
		if err != nil {
			return nil, err
		}
		w.consumers = append(w.consumers, cl)
		d := &deleter{topic: main, adm: kadm.NewClient(cl), rec: rec, st: st, read: read, every: o.DeleteInterval,
			rng: rand.New(rand.NewPCG(uint64(o.Seed), 0xde1e7e)), deleted: map[int32]int64{}}
		w.consWG.Add(1)
		go func() {
			defer w.consWG.Done()
			d.run(w.consCtx)
		}()
	}
	group := fmt.Sprintf("weir-verify-%d", o.Seed)
	for i := range o.GroupMembers {
		s := &memberSlot{w: w, group: group, slot: i + 1, rng: rand.New(rand.NewPCG(uint64(o.Seed), uint64(0x6e0+i)))}
		w.consWG.Add(1)
		go func() {
			defer w.consWG.Done()
			s.run(w.consCtx)
		}()
	}
	return w, nil
}

// memberSlot is one place in the consumer group: its member runs until
// the workload stops, or, with --group-churn, leaves after a drawn time
// (half to one and a half times the churn) and a new member, a new
// process (g1, g1.1, g1.2, ...), joins in its place.
type memberSlot struct {
	w     *workload
	group string
	slot  int
	rng   *rand.Rand
}

func (s *memberSlot) run(ctx context.Context) {
	o := s.w.o
	for gen := 0; ctx.Err() == nil; gen++ {
		name := fmt.Sprintf("g%d", s.slot)
		if gen > 0 {
			name = fmt.Sprintf("g%d.%d", s.slot, gen)
		}
		cl, err := s.w.client(name, memberOpts(s.group, o.GroupProtocol, s.w.topics, s.w.rec, name)...)
		if err != nil {
			s.w.rec.Add(Op{F: FFault, Type: TInfo, Proc: name, Err: err.Error()})
			return
		}
		mctx, leave := context.WithCancel(ctx)
		if o.GroupChurn > 0 {
			stay := o.GroupChurn/2 + time.Duration(s.rng.Int64N(int64(o.GroupChurn)))
			time.AfterFunc(stay, leave)
		}
		(&member{name: name, group: s.group, cl: cl, rec: s.w.rec, st: s.w.st}).run(mctx)
		leave()
		cl.Close() // leaves the group: its partitions go to the others
	}
}

// stopProducers stops new sends and waits (bounded, briefly in a hurry)
// for those in flight.
func (w *workload) stopProducers(hurry bool) {
	w.stopProd()
	w.prodWG.Wait()
	first, second := 45*time.Second, 60*time.Second
	if hurry {
		first, second = 5*time.Second, 5*time.Second
	}
	fctx, cancel := context.WithTimeout(context.Background(), first)
	defer cancel()
	for _, cl := range w.producers {
		cl.Flush(fctx)
	}
	w.cancelSends() // what is not sent yet fails; what is in flight waits for its answer
	fctx2, cancel2 := context.WithTimeout(context.Background(), second)
	defer cancel2()
	for _, cl := range w.producers {
		cl.Flush(fctx2)
	}
}

func (w *workload) stopConsumers() {
	w.stopCons()
	w.consWG.Wait()
}

func (w *workload) close() {
	for _, cl := range append(w.producers, w.consumers...) {
		cl.Close()
	}
	w.producers, w.consumers = nil, nil
}

func (w *workload) finalRead(hurry bool) error {
	cl, err := w.client("final", append(consumerOpts(), kgo.ConsumePartitions(allFromStart(w.topics)))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	wait := 3 * time.Minute
	if hurry {
		wait = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return finalRead(ctx, cl, kadm.NewClient(cl), w.topics, w.rec, w.st)
}
