package metrics_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// fetchAtEnd is a consumer fetch of partition 0 of topic at offset,
// long-polling up to wait for one byte.
func fetchAtEnd(topic string, offset int64, wait time.Duration) *kmsg.FetchRequest {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MinBytes, fetch.MaxBytes = 11, -1, 1, 1<<20
	fetch.MaxWaitMillis = int32(wait / time.Millisecond)
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = 0, offset, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	return fetch
}

// TestMetricsLongPollIsRemoteTime: a fetch that long-polls at the log
// end for its whole max wait spends that wait as remote time, and its
// local time is the little rest; a fetch that does not wait has no remote
// time. Each request's parts add up to its total.
func TestMetricsLongPollIsRemoteTime(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener)
	ctx := harness.Ctx(t, 2*time.Minute)
	const topic = "polled"
	cl := b.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	conn := b.Dial()
	// Only this test fetches from the broker: every Fetch counted is ours.
	fetched := func(n float64, what string) requestTimes {
		t.Helper()
		var rt requestTimes
		harness.WaitFor(t, 30*time.Second, what, func() bool {
			rt = scrapeMetrics(t, b.MetricsURL).requestTimes("Fetch")
			return rt.settled(n)
		})
		return rt
	}
	before := fetched(0, "no fetch counted")

	// Nothing new arrives: the fetch answers after its max wait.
	const wait = 2 * time.Second
	sent := time.Now()
	resp, _ := conn.Request(fetchAtEnd(topic, 1, wait))
	rtt := time.Since(sent)
	if fr := resp.(*kmsg.FetchResponse); fr.Topics[0].Partitions[0].ErrorCode != 0 || len(fr.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("long poll at the log end: %+v", fr.Topics[0].Partitions[0])
	}
	poll := fetched(1, "the long poll counted").minus(before)
	checkAddsUp(t, "Fetch", poll)
	handler := poll.local + poll.remote
	switch {
	case handler < wait.Seconds():
		t.Errorf("the handler answered a %v long poll in %vs", wait, handler)
	case poll.queue+handler > rtt.Seconds():
		// The request was sent before the server read it, and its answer
		// (written after the handler returned) read after. The send time
		// may end after the client has read the answer.
		t.Errorf("the server read and handled the request in %vs, the client's round trip took %v", poll.queue+handler, rtt)
	case poll.remote < poll.local:
		// The handler reads one empty partition, then waits.
		t.Errorf("a %v long poll: remote %vs, local %vs", wait, poll.remote, poll.local)
	}

	// MaxWait 0: answered at once, never waiting.
	resp, _ = conn.Request(fetchAtEnd(topic, 1, 0))
	if fr := resp.(*kmsg.FetchResponse); fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch: %+v", fr.Topics[0].Partitions[0])
	}
	quick := fetched(2, "the quick fetch counted").minus(before)
	checkAddsUp(t, "Fetch", quick)
	if quick.remote != poll.remote {
		t.Errorf("a fetch with max wait 0 has remote time %vs", quick.remote-poll.remote)
	}
}

// TestMetricsLogFlushTime: with log.flush.interval.messages=1 every
// produced batch is fsynced, and each fsync is timed in
// LogFlushRateAndTimeMs.
func TestMetricsLogFlushTime(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener, "log.flush.interval.messages=1")
	ctx := harness.Ctx(t, 2*time.Minute)
	const topic, n = "flushed", 10
	cl := b.Client(kgo.ProducerLinger(0))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	const flushes = "kafka_log_logflushstats_logflushrateandtime_seconds"
	before, _ := scrapeMetrics(t, b.MetricsURL).Histogram(flushes, nil)
	for i := range n {
		// One batch per request: ProduceSync waits for each answer.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Each append fsyncs before it is answered.
	after, sum := scrapeMetrics(t, b.MetricsURL).Histogram(flushes, nil)
	if after-before < n {
		t.Errorf("%v log flushes timed for %d batches with log.flush.interval.messages=1", after-before, n)
	}
	if sum <= 0 {
		t.Errorf("log flushes took %vs in all", sum)
	}
}

// TestMetricsRecoveryAfterKill: a start after kill -9 recovers the logs
// it finds unflushed and says so, with the seconds it took; a start
// after a clean shutdown recovers none.
func TestMetricsRecoveryAfterKill(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener)
	ctx := harness.Ctx(t, 2*time.Minute)
	const topic, partitions = "recovered", 3
	cl := b.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := scrapeMetrics(t, b.MetricsURL)
	if got := s.Value("weir_log_recovery_logs", nil); got != 0 {
		t.Errorf("a fresh broker loaded %v logs", got)
	}
	cl.Close()

	b.Kill()
	b.Restart()
	s = scrapeMetrics(t, b.MetricsURL)
	logs := s.Value("weir_log_recovery_logs", nil)
	recovered := s.Value("weir_log_recovery_unflushed_logs", nil)
	segments := s.Value("weir_log_recovery_unflushed_segments", nil)
	switch {
	case logs < partitions:
		t.Errorf("loaded %v logs, the topic has %d partitions", logs, partitions)
	case recovered != logs:
		// No clean-shutdown marker: every log is rescanned from its
		// recovery point.
		t.Errorf("after kill -9, %v of %v logs recovered", recovered, logs)
	case segments < recovered:
		t.Errorf("%v segments recovered in %v logs", segments, recovered)
	}
	if got := s.Value("weir_log_recovery_seconds", nil); got <= 0 {
		t.Errorf("loading took %vs", got)
	}

	b.Stop()
	b.Restart()
	s = scrapeMetrics(t, b.MetricsURL)
	if got := s.Value("weir_log_recovery_logs", nil); got != logs {
		t.Errorf("after a clean restart %v logs loaded, %v before", got, logs)
	}
	if got := s.Value("weir_log_recovery_unflushed_logs", nil); got != 0 {
		t.Errorf("after a clean shutdown %v logs recovered", got)
	}
}
