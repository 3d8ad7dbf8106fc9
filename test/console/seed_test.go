package console

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// scriptValue is an untrusted record value: markup that would run if the
// console ever wrote it as HTML.
const scriptValue = `<script>window.__pwned = 1; document.title = "pwned"</script><img src=x onerror="window.__pwned = 2">`

// seeded is what seed wrote.
type seeded struct {
	adm      *kadm.Client
	produced int64 // records in orders
}

// seed creates topic orders (3 partitions, retention 1 d) with records
// on each: partition 0 starts with a JSON value with headers, then the
// script value; and topic audit (1 partition).
func seed(t *testing.T, b *harness.Broker) seeded {
	t.Helper()
	ctx := harness.Ctx(t, time.Minute)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	day := "86400000"
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": &day}, "orders"); err != nil {
		t.Fatalf("create orders: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "audit"); err != nil {
		t.Fatalf("create audit: %v", err)
	}
	value, _ := json.Marshal(map[string]any{"order": 1, "item": "tea", "qty": 2})
	recs := []*kgo.Record{
		{Topic: "orders", Partition: 0, Key: []byte("order-1"), Value: value, Timestamp: time.UnixMilli(1_700_000_000_000),
			Headers: []kgo.RecordHeader{{Key: "trace-id", Value: []byte("abc123")}, {Key: "source", Value: []byte("web")}}},
		{Topic: "orders", Partition: 0, Key: []byte("evil"), Value: []byte(scriptValue)},
		{Topic: "orders", Partition: 0, Key: nil, Value: []byte{0x00, 0xff, 0x10, 0x80}},
	}
	for i := range 12 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(1 + i%2), Key: []byte(fmt.Sprintf("order-%d", i+2)),
			Value: []byte(fmt.Sprintf(`{"order":%d,"item":"coffee"}`, i+2))})
	}
	recs = append(recs, &kgo.Record{Topic: "audit", Value: []byte("login ok")})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return seeded{adm: adm, produced: 15}
}

// consumeAll runs a consumer of group over orders until it has read
// every record and committed; with keep the member stays in the group
// (closed at the end of the test), without it leaves (the group is then
// empty, so its offsets may be reset).
func consumeAll(t *testing.T, b *harness.Broker, group string, want int64, keep bool) {
	t.Helper()
	ctx := harness.Ctx(t, time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.ClientID("test-"+group))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for n < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			cl.Close()
			t.Fatalf("group %s read %d of %d records: %v", group, n, want, err)
		}
		n += int64(fs.NumRecords())
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		cl.Close()
		t.Fatalf("commit: %v", err)
	}
	if !keep {
		cl.Close()
		return
	}
	t.Cleanup(cl.Close)
}

// committed is group's committed offset of orders/p.
func committed(t *testing.T, adm *kadm.Client, group string, p int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	o, ok := os.Lookup("orders", p)
	if !ok {
		return -1
	}
	if o.Err != nil {
		t.Fatalf("FetchOffsets %s orders/%d: %v", group, p, o.Err)
	}
	return o.At
}
