package descriptors

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// fdLimit is the broker's RLIMIT_NOFILE (soft and hard) in these tests.
const fdLimit = 1024

// maxRSS stops a test whose broker grows past it (the machine is shared).
const maxRSS = 2 << 30

// opTimeout bounds one client operation on a slow, shared machine.
const opTimeout = 2 * time.Minute

// peakAllowed is the most descriptors the broker may hold under fdLimit:
// segment files take at most half of the limit (weir.log.max.open.files
// unset), and the rest of the broker (listeners, a few client sockets,
// Raft's bolt db, files being written) needs far fewer than a quarter.
const peakAllowed = fdLimit * 3 / 4

// tp names one partition.
type tp struct {
	topic     string
	partition int32
}

// TestThousandsOfPartitionsUnderFDLimit: 3000 partitions under a limit
// of 1024 descriptors are created, written and read, survive SIGTERM and
// SIGKILL, and the broker never holds more than peakAllowed descriptors.
// Before the descriptor cache every partition kept its active segment
// open, so creating the topics ran out of descriptors.
func TestThousandsOfPartitionsUnderFDLimit(t *testing.T) {
	b := harness.StartBrokerFDLimit(t, fdLimit)
	w := b.WatchResources(t, fdLimit, maxRSS)
	const topics, partitions = 6, 500
	var names []string
	for i := range topics {
		names = append(names, fmt.Sprintf("wide-%d", i))
	}
	for _, n := range names {
		createTopic(t, b, n, partitions, nil)
	}
	checkPeak(t, b, w, "after creating the topics")

	var all []tp
	for _, n := range names {
		for p := range int32(partitions) {
			all = append(all, tp{n, p})
		}
	}
	produceRound(t, b, w, all, 0)
	checkRounds(t, b, w, names, all, 1)

	b.Stop()
	b.Restart()
	checkPeak(t, b, w, "after a restart from SIGTERM")
	checkRounds(t, b, w, names, all, 1)
	produceRound(t, b, w, all, 1)

	b.Kill()
	b.Restart()
	checkPeak(t, b, w, "after a restart from SIGKILL")
	checkRounds(t, b, w, names, all, 2)
	produceRound(t, b, w, all, 2)
	checkRounds(t, b, w, names, all, 3)
	fds, rss := w.Max()
	t.Logf("%d partitions: peak %d open descriptors (limit %d), peak RSS %d MiB", len(all), fds, fdLimit, rss>>20)
}

// TestThousandsOfSegmentsUnderFDLimit: with segment.bytes=100 every batch
// rolls a new segment. 1200 of them, written, read, stopped, killed and
// reloaded, never raise the descriptor count by more than the cache's
// capacity (weir.log.max.open.files=32 here). Before the cache every
// segment kept its .log open: one more descriptor per batch.
func TestThousandsOfSegmentsUnderFDLimit(t *testing.T) {
	const capacity, batches = 32, 1200
	b := harness.StartBrokerFDLimit(t, fdLimit, fmt.Sprintf("weir.log.max.open.files=%d", capacity))
	w := b.WatchResources(t, fdLimit, maxRSS)
	const topic = "tiny-segments"
	ctx := harness.Ctx(t, 5*opTimeout)
	segBytes := "100"
	createTopic(t, b, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	cl := b.Client(kgo.DefaultProduceTopic(topic))
	// Warm up the connections the producer uses, then take the baseline.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(0)}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	base, err := b.OpenFDs()
	if err != nil {
		t.Fatal(err)
	}
	// The cache's segments plus files opened for a moment (index and
	// checkpoint writes, directory fsyncs) and a client connection or two.
	allowed := base + capacity + 32
	for i := 1; i < batches; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(i)}).FirstErr(); err != nil {
			t.Fatalf("produce batch %d: %v\n%s", i, err, tail(b.Output()))
		}
		if i%50 == 0 {
			if n, err := b.OpenFDs(); err != nil || n > allowed {
				t.Fatalf("after %d one-batch segments: %d open descriptors (%v), started from %d, cache capacity %d",
					i, n, err, base, capacity)
			}
		}
		select {
		case <-w.Exceeded():
			t.Fatalf("broker past its safety limit: %s", w.Why())
		default:
		}
	}
	segs, err := filepath.Glob(filepath.Join(b.Dir, topic+"-0", "*.log"))
	if err != nil || len(segs) < batches/2 {
		t.Fatalf("%d segment files (%v); segment.bytes=100 should roll at every batch", len(segs), err)
	}
	cl.Close()
	checkSegments(t, b, w, topic, batches, allowed)

	b.Stop()
	b.Restart()
	checkSegments(t, b, w, topic, batches, allowed)
	b.Kill()
	b.Restart()
	checkSegments(t, b, w, topic, batches, allowed)
	fds, rss := w.Max()
	t.Logf("%d segments: peak %d open descriptors (baseline %d, limit %d), peak RSS %d MiB", len(segs), fds, base, fdLimit, rss>>20)
}

// createTopic creates a topic of many partitions and waits until every
// one has a leader. Creating hundreds of partitions can outlast the
// request's timeout on a loaded machine: as in Kafka, REQUEST_TIMED_OUT
// does not say the topic was not created, so the request is repeated
// until it is created or already exists. Any other error fails the test
// (before the descriptor cache: KAFKA_STORAGE_ERROR, too many open files).
func createTopic(t *testing.T, b *harness.Broker, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl := b.Client()
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(opTimeout / time.Millisecond))
	ctx := harness.Ctx(t, 3*opTimeout)
	for {
		resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.RequestTimedOut) && ctx.Err() == nil {
			t.Logf("create topic %s: %v; asking again", topic, err)
			continue
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			t.Fatalf("create topic %s: %v (%s)\n%s", topic, err, resp.ErrMessage, tail(b.Output()))
		}
		break
	}
	harness.WaitFor(t, opTimeout, fmt.Sprintf("%d partitions of %s with a leader", partitions, topic), func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) != int(partitions) {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		return true
	})
}

func value(i int) []byte { return fmt.Appendf(nil, "seg-%05d", i) }

// checkSegments reads the whole topic back and checks every value and
// that the descriptor count stayed within allowed.
func checkSegments(t *testing.T, b *harness.Broker, w *harness.ResourceWatch, topic string, batches, allowed int) {
	t.Helper()
	got := consume(t, b, []string{topic}, map[tp]int64{{topic, 0}: int64(batches)})
	for i := range batches {
		if v := got[tp{topic, 0}][int64(i)]; v != string(value(i)) {
			t.Fatalf("offset %d holds %q, want %q", i, v, value(i))
		}
	}
	if n, err := b.OpenFDs(); err != nil || n > allowed {
		t.Fatalf("after reading %d segments: %d open descriptors (%v), allowed %d", batches, n, err, allowed)
	}
	checkPeak(t, b, w, "reading the segments")
}

// produceRound writes one record per partition, "round-<r>", acks=all,
// and fails unless every one is acknowledged at offset r.
func produceRound(t *testing.T, b *harness.Broker, w *harness.ResourceWatch, all []tp, r int) {
	t.Helper()
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	recs := make([]*kgo.Record, len(all))
	for i, p := range all {
		recs[i] = &kgo.Record{Topic: p.topic, Partition: p.partition, Value: fmt.Appendf(nil, "round-%d", r)}
	}
	res := cl.ProduceSync(harness.Ctx(t, opTimeout), recs...)
	for _, pr := range res {
		if pr.Err != nil {
			t.Fatalf("produce round %d to %s-%d: %v\n%s", r, pr.Record.Topic, pr.Record.Partition, pr.Err, tail(b.Output()))
		}
		if pr.Record.Offset != int64(r) {
			t.Fatalf("round %d to %s-%d acknowledged at offset %d", r, pr.Record.Topic, pr.Record.Partition, pr.Record.Offset)
		}
	}
	checkPeak(t, b, w, fmt.Sprintf("producing round %d", r))
}

// checkRounds reads every partition and checks it holds exactly rounds
// records, "round-<offset>".
func checkRounds(t *testing.T, b *harness.Broker, w *harness.ResourceWatch, names []string, all []tp, rounds int) {
	t.Helper()
	want := make(map[tp]int64, len(all))
	for _, p := range all {
		want[p] = int64(rounds)
	}
	got := consume(t, b, names, want)
	for _, p := range all {
		for off := range int64(rounds) {
			if v := got[p][off]; v != fmt.Sprintf("round-%d", off) {
				t.Fatalf("%s-%d offset %d holds %q, want round-%d", p.topic, p.partition, off, v, off)
			}
		}
	}
	checkPeak(t, b, w, fmt.Sprintf("reading %d rounds", rounds))
}

// consume reads want[p] records of every partition p from offset 0 and
// returns offset -> value per partition. The end offsets must match want
// exactly: nothing acknowledged lost, nothing unexpected stored.
func consume(t *testing.T, b *harness.Broker, topics []string, want map[tp]int64) map[tp]map[int64]string {
	t.Helper()
	ctx := harness.Ctx(t, opTimeout)
	admCl := b.Client()
	defer admCl.Close() // each connection is a descriptor of the broker's
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topics...)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != want[tp{o.Topic, o.Partition}] {
			t.Fatalf("end offset of %s-%d: %d (%v), want %d", o.Topic, o.Partition, o.Offset, o.Err, want[tp{o.Topic, o.Partition}])
		}
	})
	starts := map[string]map[int32]kgo.Offset{}
	remaining := 0
	out := make(map[tp]map[int64]string, len(want))
	for p, n := range want {
		if starts[p.topic] == nil {
			starts[p.topic] = map[int32]kgo.Offset{}
		}
		starts[p.topic][p.partition] = kgo.NewOffset().At(0)
		out[p] = map[int64]string{}
		remaining += int(n)
	}
	cl := b.Client(kgo.ConsumePartitions(starts))
	defer cl.Close()
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %d records unread at the deadline\n%s", remaining, tail(b.Output()))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			p := tp{r.Topic, r.Partition}
			if _, dup := out[p][r.Offset]; !dup && r.Offset < want[p] {
				out[p][r.Offset] = string(r.Value)
				remaining--
			}
		})
	}
	return out
}

// checkPeak fails if the broker ever held more than peakAllowed
// descriptors, passed the watch's safety limits, or logged a race.
func checkPeak(t *testing.T, b *harness.Broker, w *harness.ResourceWatch, when string) {
	t.Helper()
	w.Sample()
	if why := w.Why(); why != "" {
		t.Fatalf("%s: broker past its safety limit: %s", when, why)
	}
	if fds, _ := w.Max(); fds > peakAllowed {
		t.Fatalf("%s: the broker held %d descriptors (limit %d, allowed %d)\n%s", when, fds, fdLimit, peakAllowed, tail(b.Output()))
	}
	if out := b.Output(); strings.Contains(out, "WARNING: DATA RACE") || strings.Contains(out, "panic:") {
		t.Fatalf("%s: broker log shows a race or panic:\n%s", when, out)
	}
}

// tail is the end of the broker's log, for failure messages.
func tail(s string) string {
	if len(s) > 4000 {
		return "...\n" + s[len(s)-4000:]
	}
	return s
}
