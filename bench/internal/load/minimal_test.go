package load

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The hand-built Produce request is what kmsg encodes for the same
// request.
func TestMinimalProduceRequestMatchesKmsg(t *testing.T) {
	vals := newValues(randomPool(2), 100, 0)
	pid := producerID{id: 7, epoch: 1}
	n := 5
	batch := appendBatch(nil, newValues(randomPool(2), 100, 0), n, 100, pid, 3, 1234, nil)
	if len(batch) != batchLen(n, 100) {
		t.Fatalf("batch of %d bytes, batchLen says %d", len(batch), batchLen(n, 100))
	}
	m := &minConn{}
	got := m.produceRequest(nil, "orders", 2, -1, func(dst []byte) []byte {
		return appendBatch(dst, vals, n, 100, pid, 3, 1234, nil)
	}, len(batch))

	req := kmsg.NewPtrProduceRequest()
	req.Version = minProduceVersion
	req.Acks = -1
	req.TimeoutMillis = 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 2
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	want := req.AppendTo((&minConn{}).header(nil, req))
	frame(want)
	if !bytes.Equal(got, want) {
		t.Fatalf("hand-built request differs from kmsg's:\n got %x\nwant %x", got[:80], want[:80])
	}
}

func TestRecordsPerBatchFillsOneMB(t *testing.T) {
	for _, size := range []int{100, 1024, 1 << 20} {
		n := recordsPerBatch(size)
		if l := batchLen(n, size); n > 1 && (l > minimalBatchBytes || batchLen(n+1, size) <= minimalBatchBytes) {
			t.Errorf("size %d: %d records make %d bytes", size, n, l)
		}
	}
}

// The minimal producer's batches are what franz-go reads back, record by
// record, and the minimal consumer counts them all, at both acks.
func TestMinimalClientRoundTrip(t *testing.T) {
	addr := startKfake(t)
	noCPU := func() (time.Duration, error) { return 0, nil }
	ctx := context.Background()
	for _, acks := range []int{1, -1} {
		topic := "t" + map[int]string{1: "one", -1: "all"}[acks]
		createTopic(t, addr, topic, 3)
		w := Workload{RecordSize: 1024, Partitions: 3, Producers: 2, Acks: acks, Duration: time.Minute, MaxBytes: 12 << 20}
		res, err := ProduceMinimal(ctx, addr, topic, w, noCPU)
		if err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
		if res.Bytes < w.MaxBytes || res.Records*1024 != res.Bytes {
			t.Fatalf("acks=%d: acknowledged %d records, %d bytes", acks, res.Records, res.Bytes)
		}
		got, err := ConsumeMinimal(ctx, addr, topic, 3, res.Records, noCPU)
		if err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
		if got.Records != res.Records || got.Bytes != res.Bytes {
			t.Fatalf("acks=%d: consumed %d records (%d bytes) of %d", acks, got.Records, got.Bytes, res.Records)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for n < res.Records {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) != 1024 || r.Key != nil {
					t.Fatalf("record at %d: %d value bytes, key %q", r.Offset, len(r.Value), r.Key)
				}
				n++
			})
		}
		cl.Close()
	}
}

// The minimal latency client gets every record it sends back, each with
// a latency that is positive and below the run's length.
func TestMinimalLatencyRoundTrip(t *testing.T) {
	addr := startKfake(t)
	ctx := context.Background()
	createTopic(t, addr, "lat", 1)
	run := LatencyRun{Size: 1024, Rate: 20_000, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond}
	res, err := LatencyMinimal(ctx, addr, "lat", run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent < 1000 || len(res.Samples) == 0 || int64(len(res.Samples)) > res.Sent {
		t.Fatalf("sent %d, %d samples", res.Sent, len(res.Samples))
	}
	for _, d := range res.Samples {
		if d <= 0 || d > res.Elapsed {
			t.Fatalf("latency %v in a run of %v", d, res.Elapsed)
		}
	}
}

// startKfake starts an in-process kfake of one broker for the test and
// returns its address.
func startKfake(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// createTopic creates topic with partitions partitions on the broker at
// addr.
func createTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	adm, err := NewAdmin([]string{addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(context.Background(), topic, partitions, 1, nil); err != nil {
		t.Fatal(err)
	}
}

// The prefetching consumer's header-only walk moves to the offsets the
// checking walk does, and only the checking walk sees a corrupt batch.
func TestWholeBatchesAgreesWithTakeBatches(t *testing.T) {
	vals := newValues(randomPool(3), 100, 0)
	var b []byte
	for i, n := range []int{3, 5, 2} { // offsets 0-2, 3-7, 8-9
		start := len(b)
		b = appendBatch(b, vals, n, 100, producerID{id: -1, epoch: -1}, -1, 1234, nil)
		binary.BigEndian.PutUint64(b[start:], uint64([]int{0, 3, 8}[i]))
	}
	cut := b[:len(b)-7] // the last batch cut short, as by a fetch size
	for _, tc := range []struct {
		from, wantNext, wantRecords int64
		in                          []byte
	}{
		{0, 10, 10, b},
		{4, 10, 7, b}, // the batch holding 4 is taken whole
		{0, 8, 8, cut},
		{10, 10, 0, b},
	} {
		n, next, err := wholeBatches(tc.in, tc.from, nil)
		var res Result
		tn, tnext, terr := takeBatches(tc.in, tc.from, &res, nil)
		if err != nil || terr != nil || n != tc.wantRecords || tn != n || next != tc.wantNext || tnext != next {
			t.Errorf("from %d: headers %d records to %d (%v), checked %d to %d (%v); want %d to %d",
				tc.from, n, next, err, tn, tnext, terr, tc.wantRecords, tc.wantNext)
		}
	}
	bad := bytes.Clone(b)
	bad[len(bad)-3] ^= 1 // a value byte of the last batch
	if _, next, err := wholeBatches(bad, 0, nil); err != nil || next != 10 {
		t.Fatalf("headers of a corrupt batch: next %d, %v", next, err)
	}
	var res Result
	if _, _, err := takeBatches(bad, 0, &res, nil); err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("corrupt batch taken: %v", err)
	}
}
