package interop

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// kgoCodec maps a codec name to franz-go's option.
func kgoCodec(t *testing.T, codec string) kgo.CompressionCodec {
	switch codec {
	case "none":
		return kgo.NoCompression()
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	t.Fatalf("unknown codec %q", codec)
	return kgo.NoCompression()
}

func toKgo(topic string, r rec) *kgo.Record {
	kr := &kgo.Record{Topic: topic, Partition: r.Partition, Value: []byte(r.Value)}
	if r.Key != nil {
		kr.Key = []byte(*r.Key)
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
	}
	if r.Timestamp != 0 {
		kr.Timestamp = time.UnixMilli(r.Timestamp)
	}
	return kr
}

func fromKgo(kr *kgo.Record) rec {
	r := rec{Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset, Value: string(kr.Value), Timestamp: kr.Timestamp.UnixMilli()}
	if kr.Key != nil {
		r.Key = strp(string(kr.Key))
	}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, [2]string{h.Key, string(h.Value)})
	}
	return r
}

// produceKgo produces recs in order, in as few batches as the linger
// allows, and returns the acks in record order.
func produceKgo(t *testing.T, b *harness.Broker, topic, codec string, recs []rec, opts ...kgo.Opt) []ack {
	t.Helper()
	cl := b.Client(append([]kgo.Opt{
		kgo.ProducerBatchCompression(kgoCodec(t, codec)),
		kgo.ProducerLinger(20 * time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = toKgo(topic, r)
	}
	produceSync(t, cl, krs...)
	acks := make([]ack, len(krs))
	for i, kr := range krs {
		acks[i] = ack{Partition: kr.Partition, Offset: kr.Offset}
	}
	return acks
}

// consumeKgo reads want[topic] records from each topic, from the start,
// without a group.
func consumeKgo(t *testing.T, b *harness.Broker, want map[string]int) []*kgo.Record {
	t.Helper()
	topics, total := make([]string, 0, len(want)), 0
	for topic, n := range want {
		topics = append(topics, topic)
		total += n
	}
	cl := b.Client(kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx := harness.Ctx(t, opTimeout)
	var got []*kgo.Record
	for len(got) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consumed %d of %d records before the deadline", len(got), total)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// TestKgoRoundTrip100k produces 100k keyed records with acks=all over
// several partitions and reads every one back exactly once, in produce
// order per partition, at contiguous offsets from 0.
func TestKgoRoundTrip100k(t *testing.T) {
	const n, partitions = 100_000, 4
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	createTopic(t, adm, "rt100k", partitions, nil)

	cl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	ctx := harness.Ctx(t, 3*opTimeout)
	var (
		mu     sync.Mutex
		errs   []error
		placed = make([][]int, partitions) // produce index by partition, in ack order
	)
	start := time.Now()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: "rt100k", Key: fmt.Appendf(nil, "k%d", i%997), Value: fmt.Appendf(nil, "%d", i)}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			placed[r.Partition] = append(placed[r.Partition], i)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if len(errs) > 0 {
		t.Fatalf("%d produce errors, first: %v", len(errs), errs[0])
	}

	produced := time.Since(start)
	start = time.Now()
	got := consumeKgo(t, b, map[string]int{"rt100k": n})
	t.Logf("produced %d records (acks=all) in %v, consumed them in %v (race-enabled broker)", n, produced, time.Since(start))
	next := make([]int64, partitions)
	seen := make([]bool, n)
	for _, r := range got {
		var i int
		if _, err := fmt.Sscan(string(r.Value), &i); err != nil || i < 0 || i >= n {
			t.Fatalf("bad value %q at %d/%d", r.Value, r.Partition, r.Offset)
		}
		if seen[i] {
			t.Fatalf("record %d consumed twice", i)
		}
		seen[i] = true
		p := r.Partition
		if r.Offset != next[p] {
			t.Fatalf("partition %d: offset %d after %d, want contiguous offsets", p, r.Offset, next[p]-1)
		}
		if want := placed[p][r.Offset]; want != i {
			t.Fatalf("partition %d offset %d holds record %d, producer was acked record %d there", p, r.Offset, i, want)
		}
		next[p]++
	}
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	for p := range partitions {
		if next[p] == 0 {
			t.Errorf("partition %d got no records: keys should spread", p)
		}
		t.Logf("partition %d: %d records", p, next[p])
	}
}

// TestFetchLongPoll parks a fetch at the end of an empty partition and
// checks that a record produced afterwards wakes it (well before its
// two-minute max wait), both for a raw Fetch and for a polling consumer.
func TestFetchLongPoll(t *testing.T) {
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	createTopic(t, adm, "longpoll", 1, nil)
	md, err := adm.Metadata(harness.Ctx(t, opTimeout), "longpoll")
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics["longpoll"].ID

	raw := b.Client()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 120_000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "longpoll", topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	type result struct {
		resp *kmsg.FetchResponse
		err  error
	}
	rawDone := make(chan result, 1)
	go func() {
		resp, err := req.RequestWith(harness.Ctx(t, 3*opTimeout), raw)
		rawDone <- result{resp, err}
	}()

	consumer := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"longpoll": {0: kgo.NewOffset().At(0)},
	}), kgo.FetchMaxWait(2*time.Minute))
	polled := make(chan []*kgo.Record, 1)
	go func() {
		polled <- consumer.PollFetches(harness.Ctx(t, 3*opTimeout)).Records()
	}()

	// An empty partition must not answer a long poll early: this window
	// observes that, it does not synchronise anything.
	select {
	case r := <-rawDone:
		t.Fatalf("fetch on an empty partition returned before any produce: %+v, %v", r.resp, r.err)
	case <-time.After(500 * time.Millisecond):
	}

	producer := b.Client()
	produceSync(t, producer, &kgo.Record{Topic: "longpoll", Value: []byte("wake up")})

	select {
	case r := <-rawDone:
		if r.err != nil {
			t.Fatalf("raw fetch: %v", r.err)
		}
		if len(r.resp.Topics) != 1 || len(r.resp.Topics[0].Partitions) != 1 {
			t.Fatalf("raw fetch: unexpected shape %+v", r.resp)
		}
		p := r.resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("raw fetch partition error: %v", err)
		}
		if p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
			t.Fatalf("raw fetch woke without the record: hw %d, %d bytes", p.HighWatermark, len(p.RecordBatches))
		}
	case <-time.After(opTimeout):
		t.Fatal("parked raw fetch was not woken by a produce")
	}

	select {
	case recs := <-polled:
		if len(recs) != 1 || string(recs[0].Value) != "wake up" || recs[0].Offset != 0 {
			t.Fatalf("consumer got %d records, want the one produced: %v", len(recs), recs)
		}
	case <-time.After(opTimeout):
		t.Fatal("waiting consumer did not receive the record produced later")
	}
}
