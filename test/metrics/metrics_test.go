package metrics_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// batchHeaderBytes is a v2 record batch's header, from its base offset to
// its record count: franz-go's batch sizes count only the records.
const batchHeaderBytes = 61

// clientTally counts what a franz-go client sent, from its hooks.
type clientTally struct {
	mu         sync.Mutex
	requests   map[int16]int // answers read without error, by API key
	batchBytes int64         // whole record batches produced
	records    int64
}

// OnBrokerRead counts responses read: franz-go calls it before it
// completes the request, so a ProduceSync that returned is counted.
func (c *clientTally) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	c.requests[key]++
	c.mu.Unlock()
}

func (c *clientTally) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	c.mu.Lock()
	c.batchBytes += int64(m.CompressedBytes + batchHeaderBytes)
	c.records += int64(m.NumRecords)
	c.mu.Unlock()
}

func (c *clientTally) get() (requests map[int16]int, batchBytes, records int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int16]int{}
	for k, v := range c.requests {
		out[k] = v
	}
	return out, c.batchBytes, c.records
}

// TestMetricsCountAKnownWorkload produces, fetches and commits known
// amounts and checks that the series moved by exactly those amounts.
func TestMetricsCountAKnownWorkload(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener, "metrics.partition.level.enable=true")
	if b.MetricsURL == "" {
		t.Fatalf("no metrics address in the start line:\n%s", b.Output())
	}
	ctx := harness.Ctx(t, 2*time.Minute)

	// Endpoints for orchestrators; pprof is off unless asked for.
	if code, body := get(t, b.MetricsURL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, b.MetricsURL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz of a started broker: %d %s", code, body)
	}
	if code, _ := get(t, b.MetricsURL+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ with metrics.pprof.enable=false: %d, want 404", code)
	}

	const topic, n = "metered", 50
	tally := &clientTally{requests: map[int16]int{}}
	cl := b.Client(kgo.WithHooks(tally), kgo.ProducerLinger(0), kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	before := scrapeMetrics(t, b.MetricsURL)
	reqBefore, _, _ := tally.get()
	// Several produce requests of one batch each: ProduceSync waits for
	// each answer.
	for i := range n {
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: bytes.Repeat([]byte{'v'}, 10+i)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The batch hook runs after the records' promises: wait for it.
	harness.WaitFor(t, 30*time.Second, "franz-go's batch hooks", func() bool {
		_, _, r := tally.get()
		return r >= n
	})
	reqAfter, batchBytes, records := tally.get()
	produces := reqAfter[0] - reqBefore[0]
	onDisk := logBytes(t, b.Dir, topic, 0)
	if onDisk != batchBytes || records != n {
		t.Fatalf("the log holds %d bytes, franz-go says it sent %d in %d records", onDisk, batchBytes, records)
	}

	topicLabel := map[string]string{"topic": topic}
	var s scrape
	// A request is counted once its answer is written: the client may
	// read that answer first.
	harness.WaitFor(t, 30*time.Second, "the produce requests counted", func() bool {
		s = scrapeMetrics(t, b.MetricsURL)
		return s.Sum("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"})-
			before.Sum("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}) >= float64(produces)
	})
	if got := s.Sum("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}) -
		before.Sum("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}); got != float64(produces) {
		t.Errorf("Produce requests counted %v, franz-go sent %d", got, produces)
	}
	for _, h := range []string{"kafka_network_requestmetrics_totaltime_seconds", "kafka_network_requestmetrics_requestqueuetime_seconds",
		"kafka_network_requestmetrics_responsesendtime_seconds", "kafka_network_requestmetrics_requestbytes"} {
		if got := s.Sum(h, map[string]string{"request": "Produce"}) - before.Sum(h, map[string]string{"request": "Produce"}); got != float64(produces) {
			t.Errorf("%s: %v Produce observations, want %d", h, got, produces)
		}
	}
	if got := s.Value("kafka_server_brokertopicmetrics_bytesin_total", topicLabel); got != float64(batchBytes) {
		t.Errorf("bytes in %v, produced %d bytes of record batches", got, batchBytes)
	}
	if got := s.Value("kafka_server_brokertopicmetrics_messagesin_total", topicLabel); got != n {
		t.Errorf("messages in %v, produced %d", got, n)
	}
	part := map[string]string{"topic": topic, "partition": "0"}
	if got := s.Value("kafka_log_log_size", part); got != float64(onDisk) {
		t.Errorf("log size %v, %d on disk", got, onDisk)
	}
	if got := s.Value("kafka_log_log_numlogsegments", part); got != 1 {
		t.Errorf("segments %v, want 1", got)
	}
	if got := s.Value("kafka_server_replicamanager_partitioncount", nil); got < 1 {
		t.Errorf("partition count %v", got)
	}
	if got, want := s.Value("kafka_server_replicamanager_leadercount", nil), s.Value("kafka_server_replicamanager_partitioncount", nil); got != want {
		t.Errorf("a single node leads all its %v partitions, leader count %v", want, got)
	}
	for _, g := range []string{"kafka_server_replicamanager_underreplicatedpartitions", "kafka_server_replicamanager_underminisrpartitioncount", "kafka_controller_kafkacontroller_offlinepartitionscount"} {
		if got := s.Value(g, nil); got != 0 {
			t.Errorf("%s = %v on a healthy single node", g, got)
		}
	}
	if got := s.Value("kafka_controller_kafkacontroller_activecontrollercount", nil); got != 1 {
		t.Errorf("active controller count %v, want 1", got)
	}
	if got := s.Value("kafka_server_socket_server_metrics_connection_count", map[string]string{"listener": "PLAINTEXT"}); got < 1 {
		t.Errorf("open PLAINTEXT connections %v with a client connected", got)
	}
	if got := s.Value("kafka_server_socket_server_metrics_connection_creation_total", map[string]string{"listener": "PLAINTEXT"}); got < 1 {
		t.Errorf("connections created %v", got)
	}
	if got := s.Value("kafka_server_replicamanager_produceridcount", nil); got != 1 {
		t.Errorf("producer ids %v after one idempotent producer", got)
	}
	if got := s.Value("kafka_controller_kafkacontroller_activebrokercount", nil); got != 1 {
		t.Errorf("active brokers %v on a single node", got)
	}
	if got := s.Value("kafka_controller_kafkacontroller_fencedbrokercount", nil); got != 0 {
		t.Errorf("fenced brokers %v on a single node", got)
	}
	if s.Metrics["kafka_network_socketserver_memorypoolavailable"] == nil || s.Metrics["kafka_network_socketserver_memorypoolused"] == nil {
		t.Error("request memory pool series missing")
	}
	if s.Metrics["go_goroutines"] == nil || s.Metrics["process_resident_memory_bytes"] == nil {
		t.Error("Go runtime or process collector missing")
	}

	// Bytes out: one consumer fetch of the whole partition, whose record
	// bytes are known exactly.
	conn := b.Dial()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, -1, 0, 1, 16<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset = 0, 0, 16<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, _ := conn.Request(fetch)
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch: %+v", fr)
	}
	sent := len(fr.Topics[0].Partitions[0].RecordBatches)
	if int64(sent) != onDisk {
		t.Fatalf("fetched %d bytes of a %d-byte log", sent, onDisk)
	}
	// Bytes are counted before the answer is written, the request after.
	harness.WaitFor(t, 30*time.Second, "the fetch counted", func() bool {
		s = scrapeMetrics(t, b.MetricsURL)
		return s.Value("kafka_server_brokertopicmetrics_bytesout_total", topicLabel) >= float64(sent) &&
			s.Value("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Fetch", "version": "11"}) >= 1
	})
	if got := s.Value("kafka_server_brokertopicmetrics_bytesout_total", topicLabel); got != float64(sent) {
		t.Errorf("bytes out %v, the fetch carried %d", got, sent)
	}
	if got := s.Value("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Fetch", "version": "11"}); got != 1 {
		t.Errorf("Fetch v11 requests %v, sent 1", got)
	}

	// Lag: a group that committed offset 20 of 50.
	const committed = 20
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "metered-group", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	lag := map[string]string{"group": "metered-group", "topic": topic, "partition": "0"}
	harness.WaitFor(t, 30*time.Second, "the group's lag", func() bool {
		s = scrapeMetrics(t, b.MetricsURL)
		return s.Value("kafka_consumergroup_lag", lag) != 0
	})
	if got := s.Value("kafka_consumergroup_lag", lag); got != n-committed {
		t.Errorf("lag %v, want end offset %d minus committed %d", got, n, committed)
	}
	if got := s.Value("kafka_coordinator_group_groupmetadatamanager_numgroups", map[string]string{"state": "Empty"}); got != 1 {
		t.Errorf("groups in state Empty %v, want 1", got)
	}

	// Purgatory: a fetch long-polling at the log end is counted while it
	// waits, and no longer once a record wakes it.
	purgatory := map[string]string{"delayedOperation": "Fetch"}
	poll := b.Dial()
	fp.FetchOffset, fetch.MaxWaitMillis = n, 60_000
	ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	polled := make(chan error, 1)
	go func() {
		_, _, err := poll.TryRequest(fetch)
		polled <- err
	}()
	harness.WaitFor(t, 30*time.Second, "the long poll in the fetch purgatory", func() bool {
		return scrapeMetrics(t, b.MetricsURL).Value("kafka_server_delayedoperationpurgatory_purgatorysize", purgatory) == 1
	})
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("wake")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := <-polled; err != nil {
		t.Fatalf("long poll: %v", err)
	}
	harness.WaitFor(t, 30*time.Second, "the fetch purgatory empty", func() bool {
		return scrapeMetrics(t, b.MetricsURL).Value("kafka_server_delayedoperationpurgatory_purgatorysize", purgatory) == 0
	})
}

// TestMetricsCountKcatProduce checks a second client's produce: kcat
// (librdkafka) batches its own way, and the bytes it sent are what its
// partition's log holds.
func TestMetricsCountKcatProduce(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (make deps installs it)")
	}
	b := harness.StartBroker(t, harness.MetricsListener)
	const topic, n = "kcat-metered", 10
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "value-%d\n", i)
	}
	cmd := exec.Command("kcat", "-b", b.Addr, "-P", "-t", topic, "-p", "0", "-X", "topic.request.required.acks=-1")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	onDisk := logBytes(t, b.Dir, topic, 0)
	if onDisk == 0 {
		t.Fatal("kcat's records are not in the log")
	}
	label := map[string]string{"topic": topic}
	var s scrape
	harness.WaitFor(t, 30*time.Second, "kcat's produce counted", func() bool {
		s = scrapeMetrics(t, b.MetricsURL)
		return s.Value("kafka_server_brokertopicmetrics_messagesin_total", label) >= n
	})
	if got := s.Value("kafka_server_brokertopicmetrics_bytesin_total", label); got != float64(onDisk) {
		t.Errorf("bytes in %v, kcat's batches take %d bytes", got, onDisk)
	}
	if got := s.Value("kafka_server_brokertopicmetrics_messagesin_total", label); got != n {
		t.Errorf("messages in %v, kcat sent %d", got, n)
	}
	if got := s.Sum("kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce", "version": "7"}); got < 1 {
		t.Errorf("no Produce v7 (librdkafka's version) counted: %v", got)
	}
}

// TestMetricsPprofSwitch: /debug/pprof answers only when enabled.
func TestMetricsPprofSwitch(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener, "metrics.pprof.enable=true")
	if code, _ := get(t, b.MetricsURL+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ with metrics.pprof.enable=true: %d", code)
	}
	if code, body := get(t, b.MetricsURL+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("goroutine profile: %d", code)
	}
}
