// Package faults proves that the real weir binary survives bad input,
// crashes (SIGKILL), clean shutdowns and damaged files: after each fault
// the broker still serves, and no acknowledged record is lost.
package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// opTimeout bounds one client operation on a slow, shared machine.
const opTimeout = 60 * time.Second

// createTopic creates a topic with the given partitions and configs and
// fails the test unless the broker accepts it.
func createTopic(t testing.TB, b *harness.Broker, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(b.Client())
	resp, err := adm.CreateTopic(harness.Ctx(t, opTimeout), partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
}

// assertServes proves the broker still works for a fresh client: it
// creates (or reuses) a topic, produces one record and reads it back.
func assertServes(t *testing.T, b *harness.Broker) {
	t.Helper()
	const topic = "faults-alive"
	ctx := harness.Ctx(t, opTimeout)
	adm := kadm.NewClient(b.Client())
	// kadm returns the topic's own error as err too.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("broker no longer serves: create topic: %v\n%s", err, b.Output())
	}
	value := fmt.Sprintf("alive-%d", time.Now().UnixNano())
	pr := b.Client().ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)})
	rec, err := pr.First()
	if err != nil {
		t.Fatalf("broker no longer serves: produce: %v\n%s", err, b.Output())
	}
	got := consumeFrom(t, b, topic, 0, rec.Offset, 1)
	if len(got) != 1 || string(got[0].Value) != value || got[0].Offset != rec.Offset {
		t.Fatalf("broker no longer serves: read back %v, want %q at offset %d", got, value, rec.Offset)
	}
	assertCleanLog(t, b)
}

// assertCleanLog fails if the broker logged a data race or a panic.
func assertCleanLog(t *testing.T, b *harness.Broker) {
	t.Helper()
	out := b.Output()
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "level=ERROR msg=\"panic"} {
		if strings.Contains(out, bad) {
			t.Fatalf("broker log contains %q:\n%s", bad, out)
		}
	}
}

// consumeFrom reads n records of one partition starting at offset.
func consumeFrom(t *testing.T, b *harness.Broker, topic string, partition int32, offset int64, n int) []*kgo.Record {
	t.Helper()
	cl := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(offset)},
	}))
	defer cl.Close()
	ctx := harness.Ctx(t, opTimeout)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s-%d from %d: got %d of %d records before the deadline", topic, partition, offset, len(recs), n)
		}
		fs.EachError(func(tp string, p int32, err error) {
			// Retriable errors are retried by the client; anything
			// surfacing here is worth seeing in a failure.
			t.Logf("fetch %s-%d: %v", tp, p, err)
		})
		recs = append(recs, fs.Records()...)
	}
	return recs
}

// endOffsets is the latest offset of every partition of a topic.
func endOffsets(t *testing.T, b *harness.Broker, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(b.Client())
	lo, err := adm.ListEndOffsets(harness.Ctx(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	ends := map[int32]int64{}
	var firstErr error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && firstErr == nil {
			firstErr = o.Err
		}
		ends[o.Partition] = o.Offset
	})
	if firstErr != nil {
		t.Fatalf("list end offsets of %s: %v", topic, firstErr)
	}
	return ends
}

func itoa(n int) string { return strconv.Itoa(n) }

func quote(s string) string {
	if len(s) > 20 {
		return strconv.Quote(s[:17] + "...")
	}
	return strconv.Quote(s)
}
