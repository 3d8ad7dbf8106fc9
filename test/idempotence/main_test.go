// Package idempotence proves the idempotent producer end to end against
// the real weir binary: raw produce requests with hand-built batches
// (duplicates, gaps, fenced epochs, reordered retries), producer ids from
// InitProducerId, producer state surviving restarts with damaged or
// missing snapshots, and franz-go and librdkafka idempotent producers
// streaming through a SIGKILL of the broker.
package idempotence

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// opTimeout bounds one client operation on a slow, shared machine.
const opTimeout = 60 * time.Second

// rawClient sends hand-built requests to one broker.
type rawClient struct {
	t   *testing.T
	b   *harness.Broker
	cl  *kgo.Client
	ids map[string][16]byte // topic ids, for Produce v13
}

func newRawClient(t *testing.T, b *harness.Broker) *rawClient {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RetryTimeout(opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &rawClient{t: t, b: b, cl: cl, ids: map[string][16]byte{}}
}

// request sends req to the broker, retrying while the connection is down
// (the broker may be restarting).
func (r *rawClient) request(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	ctx := harness.Ctx(r.t, opTimeout)
	for {
		resp, err := r.cl.SeedBrokers()[0].RetriableRequest(ctx, req)
		if err == nil {
			return resp
		}
		if ctx.Err() != nil {
			r.t.Fatalf("%s request: %v\n%s", kmsg.NameForKey(req.Key()), err, r.b.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopic creates a single-partition topic and remembers its id.
func (r *rawClient) createTopic(topic string, configs map[string]*string) {
	r.t.Helper()
	adm := kadm.NewClient(r.cl)
	ctx := harness.Ctx(r.t, opTimeout)
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
	if err != nil {
		r.t.Fatalf("create topic %s: %v\n%s", topic, err, r.b.Output())
	}
	r.ids[topic] = resp.ID
}

// initProducerID asks for a producer id; txnID nil for an idempotent one.
func (r *rawClient) initProducerID(txnID *string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	r.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return r.request(req).(*kmsg.InitProducerIDResponse)
}

// newProducer returns a fresh producer id (epoch 0).
func (r *rawClient) newProducer() int64 {
	r.t.Helper()
	resp := r.initProducerID(nil, -1, -1)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		r.t.Fatalf("InitProducerId: %v", err)
	}
	if resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		r.t.Fatalf("InitProducerId gave id %d epoch %d", resp.ProducerID, resp.ProducerEpoch)
	}
	return resp.ProducerID
}

// produced is a partition's answer to a produce.
type produced struct {
	offset int64
	err    error
}

// produce sends one batch to partition 0 with acks=all.
func (r *rawClient) produce(topic string, batch []byte) produced {
	r.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, r.ids[topic]
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = bytes.Clone(batch) // the broker patches offsets into what it stores; keep ours pristine
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := r.request(req).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		r.t.Fatalf("produce response shape: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	return produced{offset: p.BaseOffset, err: kerr.ErrorForCode(p.ErrorCode)}
}

// batch builds an idempotent batch of n records valued "<tag>-<seq+i>".
func batch(t *testing.T, tag string, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{TimestampDelta: int64(i), Value: []byte(fmt.Sprintf("%s-%d", tag, int(seq)+i))}
	}
	b, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *rawClient) mustProduce(topic string, b []byte) int64 {
	r.t.Helper()
	got := r.produce(topic, b)
	if got.err != nil {
		r.t.Fatalf("produce to %s: %v\n%s", topic, got.err, r.b.Output())
	}
	return got.offset
}

func (r *rawClient) wantErr(topic string, b []byte, want error) {
	r.t.Helper()
	if got := r.produce(topic, b); !errors.Is(got.err, want) {
		r.t.Fatalf("produce to %s: error %v (offset %d), want %v", topic, got.err, got.offset, want)
	}
}

// values reads every record of partition 0 and returns the values.
func values(t *testing.T, b *harness.Broker, topic string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RetryTimeout(opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := harness.Ctx(t, opTimeout)
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		t.Fatalf("end offset of %s-0: %+v", topic, end)
	}
	var out []string
	if end.Offset == 0 {
		return out
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	for int64(len(out)) < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: %d of %d records before the deadline", topic, len(out), end.Offset)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(out)) {
				t.Fatalf("record at offset %d, expected %d", r.Offset, len(out))
			}
			out = append(out, string(r.Value))
		})
	}
	return out
}

// seqValues is "<tag>-<from>" .. "<tag>-<to-1>".
func seqValues(tag string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", tag, i))
	}
	return out
}
