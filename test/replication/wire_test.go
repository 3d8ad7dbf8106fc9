// Package replication proves the follower side's network client against
// the real weir binary: version negotiation (Fetch capped at v17, topic
// ids), OffsetForLeaderEpoch as a replica, a long-polling fetch cut short
// without holding up the next one, and reconnection after the leader
// restarts.
package replication

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replication"
	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// opTimeout bounds one operation on a slow, shared machine.
const opTimeout = 30 * time.Second

type leader struct {
	b       *harness.Broker
	topicID [16]byte
}

// startLeader starts a broker with one topic holding three records.
func startLeader(t *testing.T) *leader {
	t.Helper()
	b := harness.StartBroker(t)
	cl := b.Client()
	ctx := harness.Ctx(t, opTimeout)
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "repl")
	if err != nil {
		t.Fatalf("create topic: %v\n%s", err, b.Output())
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "repl", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	return &leader{b: b, topicID: resp.ID}
}

// dial opens a client to the leader at addr (the broker's, or a proxy's
// in front of it).
func (l *leader) dial(t *testing.T, addr string) replication.LeaderClient {
	t.Helper()
	d := &replication.WireDialer{
		Resolve: func(id int32) (string, bool) { return addr, id == 1 },
		LocalID: 2,
	}
	c, err := d.Dial(harness.Ctx(t, opTimeout), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// consumerFetch is a fetch the single-node broker serves (it has no
// follower of its own): the network path is the replica fetch's.
func (l *leader) consumerFetch(offset int64, maxWait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = int32(maxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "repl", l.topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// The dialer negotiates Fetch v17 (weir's newest, which names topics by
// id) and OffsetForLeaderEpoch v4 with a replica id, and the answers are
// the leader's: its epoch's end is its log end.
func TestWireDialerTalksToALeader(t *testing.T) {
	l := startLeader(t)
	c := l.dial(t, l.b.Addr)
	ctx := harness.Ctx(t, opTimeout)

	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = 2
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "repl"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	eresp, err := c.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if eresp.Version != 4 || len(eresp.Topics) != 1 || len(eresp.Topics[0].Partitions) != 1 {
		t.Fatalf("OffsetForLeaderEpoch v%d answer %+v", eresp.Version, eresp)
	}
	if p := eresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 3 {
		t.Fatalf("epoch 0 answered %+v, want epoch 0 ending at the log end 3", p)
	}

	fresp, err := c.Fetch(ctx, l.consumerFetch(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if fresp.Version != replication.MaxFetchVersion {
		t.Fatalf("Fetch v%d negotiated, want v%d", fresp.Version, replication.MaxFetchVersion)
	}
	if len(fresp.Topics) != 1 || fresp.Topics[0].TopicID != l.topicID || len(fresp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answer %+v", fresp)
	}
	if p := fresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.HighWatermark != 3 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch partition %+v", p)
	}

	unknown := &replication.WireDialer{Resolve: func(int32) (string, bool) { return "", false }}
	if _, err := unknown.Dial(ctx, 9); !errors.Is(err, replication.ErrNoEndpoint) {
		t.Fatalf("dial of an unknown broker: %v", err)
	}
}

// A fetch cancelled in its long poll does not hold up the next: the client
// drops the fetch connection, the broker ends the poll, and the next fetch
// is answered at once. (Were the connection kept, the next fetch would queue
// behind the first one's minute-long wait.) The fetchers rely on this to
// start a new partition without waiting out replica.fetch.wait.max.ms.
func TestWireCancelledLongPollDoesNotDelayNextFetch(t *testing.T) {
	l := startLeader(t)
	proxy := harness.StartKafkaProxy(t, l.b.Addr)
	written := make(chan struct{}, 1)
	proxy.OnRequest(func(f harness.KafkaFrame) {
		if f.Key == kmsg.Fetch {
			select {
			case written <- struct{}{}:
			default:
			}
		}
	})
	c := l.dial(t, proxy.Addr())
	ctx, cancel := context.WithCancel(harness.Ctx(t, opTimeout))
	var wg sync.WaitGroup
	wg.Add(1)
	var pollErr error
	go func() {
		defer wg.Done()
		_, pollErr = c.Fetch(ctx, l.consumerFetch(3, time.Minute)) // at the log end: waits
	}()
	<-written // on its way to the broker
	cancel()
	wg.Wait()
	if !errors.Is(pollErr, context.Canceled) {
		t.Fatalf("cancelled long poll: %v", pollErr)
	}
	next, cancelNext := context.WithTimeout(context.Background(), opTimeout)
	defer cancelNext()
	resp, err := c.Fetch(next, l.consumerFetch(0, time.Minute))
	if err != nil {
		t.Fatalf("fetch after a cancelled long poll: %v", err)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch after a cancelled long poll: %+v", p)
	}
}

// A leader that restarts fails requests in flight and on its dead
// connection; a client dialed again (as a fetcher does after a connection
// failure) reaches it.
func TestWireDialerAfterLeaderRestart(t *testing.T) {
	l := startLeader(t)
	c := l.dial(t, l.b.Addr)
	ctx := harness.Ctx(t, opTimeout)
	if _, err := c.Fetch(ctx, l.consumerFetch(0, 0)); err != nil {
		t.Fatal(err)
	}
	l.b.Kill()
	if _, err := c.Fetch(ctx, l.consumerFetch(0, 0)); err == nil {
		t.Fatal("fetch from a killed leader succeeded")
	}
	c.Close()
	l.b.Restart()
	c = l.dial(t, l.b.Addr)
	var resp *kmsg.FetchResponse
	harness.WaitFor(t, opTimeout, "the restarted leader to serve", func() bool {
		r, err := c.Fetch(ctx, l.consumerFetch(0, 0))
		if err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			return false
		}
		resp = r
		return true
	})
	if p := resp.Topics[0].Partitions[0]; p.HighWatermark != 3 || len(p.RecordBatches) == 0 {
		t.Fatalf("restarted leader answered %+v", p)
	}
}
