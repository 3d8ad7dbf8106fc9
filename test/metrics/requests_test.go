package metrics_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/errcode"
	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

const (
	requestsTotal = "kafka_network_requestmetrics_requests_total"
	responseBytes = "kafka_network_requestmetrics_responsebytes"
	errorsTotal   = "kafka_network_requestmetrics_errors_total"
)

// TestMetricsFetchConsumerAndFollower: on the leader of a three-replica
// partition, the followers' fetches are counted as FetchFollower and a
// consumer's as FetchConsumer, each also as Fetch (as Kafka counts
// them); the followers' long polls are FetchFollower's remote time and
// none of the consumer's (which do not wait).
func TestMetricsFetchConsumerAndFollower(t *testing.T) {
	c := harness.StartCluster(t, 3, harness.MetricsListener)
	ctx := harness.Ctx(t, 3*time.Minute)
	const topic = "fetch-split"
	cl := c.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	leader := c.Node(c.WaitFullISR(topic, 0, time.Minute).Leader)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	// The followers fetch all the time: wait for a scrape in which the
	// three series agree (each request moves them one after the other).
	settled := func(what string, cond func(s scrape) bool) scrape {
		t.Helper()
		var s scrape
		harness.WaitFor(t, time.Minute, what, func() bool {
			s = scrapeMetrics(t, leader.MetricsURL)
			all := s.Sum(requestsTotal, map[string]string{"request": "Fetch"})
			parts := s.Sum(requestsTotal, map[string]string{"request": "FetchConsumer"}) +
				s.Sum(requestsTotal, map[string]string{"request": "FetchFollower"})
			return all == parts && cond(s)
		})
		return s
	}
	before := settled("the followers' fetches counted", func(s scrape) bool {
		return s.Sum(requestsTotal, map[string]string{"request": "FetchFollower"}) > 0
	})
	if got := before.Sum(requestsTotal, map[string]string{"request": "FetchConsumer"}); got != 0 {
		t.Fatalf("%v consumer fetches before any consumer fetched", got)
	}

	// Three consumer fetches that do not wait (max wait 0).
	const fetches = 3
	conn := leader.Dial()
	for range fetches {
		resp, _ := conn.Request(fetchAtEnd(topic, 0, 0))
		if p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
			t.Fatalf("consumer fetch: %+v", p)
		}
	}
	// A follower at the log end long-polls (replica.fetch.wait.max.ms):
	// its fetches' remote time grows.
	after := settled("the consumer's fetches and more follower long polls counted", func(s scrape) bool {
		return s.Sum(requestsTotal, map[string]string{"request": "FetchConsumer"}) == fetches &&
			s.requestTimes("FetchConsumer").settled(fetches) &&
			s.requestTimes("FetchFollower").remote > before.requestTimes("FetchFollower").remote
	})
	consumer := after.requestTimes("FetchConsumer")
	checkAddsUp(t, "FetchConsumer", consumer)
	if consumer.remote != 0 {
		t.Errorf("consumer fetches with max wait 0 have %vs of remote time", consumer.remote)
	}
	// Fetch holds both: the followers' long polls are in its remote time.
	if all := after.requestTimes("Fetch"); all.remote < after.requestTimes("FetchFollower").remote-1e-9 {
		t.Errorf("Fetch remote time %vs, FetchFollower's %vs", all.remote, after.requestTimes("FetchFollower").remote)
	}
	if n, _ := after.Histogram(responseBytes, map[string]string{"request": "FetchConsumer"}); n != fetches {
		t.Errorf("%v consumer fetch response sizes, want %d", n, fetches)
	}
	// The version label is the request's, under both names.
	if got := after.Value(requestsTotal, map[string]string{"request": "FetchConsumer", "version": "11"}); got != fetches {
		t.Errorf("FetchConsumer v11 requests %v, want %d", got, fetches)
	}
}

// rawCreateTopic sends CreateTopics for one topic of one partition on
// conn and returns the topic's error code.
func rawCreateTopic(t *testing.T, conn *harness.RawConn, topic string) int16 {
	t.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = 5, 30000
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = topic, 1, 1
	ct.Topics = append(ct.Topics, ctt)
	resp, _ := conn.Request(ct)
	return resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
}

// rawProduce sends value as one batch to partition 0 of topic (acks=1)
// on conn and returns the partition's error code.
func rawProduce(t *testing.T, conn *harness.RawConn, topic string, value []byte) int16 {
	t.Helper()
	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, []recordbatch.Record{{Value: value}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _ := conn.Request(req)
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// createAndProduce creates topic on conn and produces value to it,
// retrying while the new partition is not yet served, and returns the
// produce error codes answered, by code.
func createAndProduce(t *testing.T, conn *harness.RawConn, topic string, value []byte) map[int16]int {
	t.Helper()
	if code := rawCreateTopic(t, conn, topic); code != 0 {
		t.Fatalf("create %s: error %d", topic, code)
	}
	codes := map[int16]int{}
	harness.WaitFor(t, 30*time.Second, "the new partition to take a produce", func() bool {
		code := rawProduce(t, conn, topic, value)
		codes[code]++
		return code == 0
	})
	return codes
}

// TestMetricsResponseBytes: the response size histogram adds up exactly
// the frames the client read (less their 4-byte size prefixes), for a
// Metadata answer and for a Fetch whose record set is sent from the
// file. Only this test's connection sends the broker requests of those
// APIs (the broker's own client sends it heartbeats), so the totals are
// its requests'.
func TestMetricsResponseBytes(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener)
	const topic = "sized"
	conn := b.Dial()
	// 200 KiB of records: past the size from which the broker sends
	// record sets with sendfile (64 KiB).
	value := make([]byte, 200<<10)
	createAndProduce(t, conn, topic, value)

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	_, mdRead := conn.Request(md)
	resp, fetchRead := conn.Request(fetchAtEnd(topic, 0, 0))
	if p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) < len(value) {
		t.Fatalf("fetch: error %d, %d bytes of records", p.ErrorCode, len(p.RecordBatches))
	}

	for _, x := range []struct {
		api  string
		read int
	}{{"Metadata", mdRead}, {"FetchConsumer", fetchRead}, {"Fetch", fetchRead}} {
		var n, sum float64
		harness.WaitFor(t, 30*time.Second, x.api+" response counted", func() bool {
			n, sum = scrapeMetrics(t, b.MetricsURL).Histogram(responseBytes, map[string]string{"request": x.api})
			return n >= 1
		})
		if n != 1 || sum != float64(x.read-4) {
			t.Errorf("%s: %v responses of %v bytes counted, the client read one of %d bytes (4 of them its size)", x.api, n, sum, x.read)
		}
	}
}

// TestMetricsErrorsPerSec: every error code of a response is counted
// under its API and Kafka's error name, NONE included: a produce to an
// unknown topic (auto-creation off) as UNKNOWN_TOPIC_OR_PARTITION, one
// to the topic as NONE, a CreateTopics of an existing topic as
// TOPIC_ALREADY_EXISTS and a successful one as NONE. Only this test's
// connection sends Produce and CreateTopics, so the totals are its
// answers'.
func TestMetricsErrorsPerSec(t *testing.T) {
	b := harness.StartBroker(t, harness.MetricsListener, "auto.create.topics.enable=false")
	const topic = "errors-counted"
	conn := b.Dial()
	if code := rawProduce(t, conn, "no-such-topic", []byte("v")); code != 3 {
		t.Fatalf("produce to an unknown topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	produced := createAndProduce(t, conn, topic, []byte("v"))
	if code := rawCreateTopic(t, conn, topic); code != 36 {
		t.Fatalf("CreateTopics of an existing topic: error %d, want TOPIC_ALREADY_EXISTS", code)
	}
	produced[3]++ // the unknown topic's
	produces := 0
	for _, n := range produced {
		produces += n
	}

	var s scrape
	harness.WaitFor(t, 30*time.Second, "the answers counted", func() bool {
		s = scrapeMetrics(t, b.MetricsURL)
		return s.Sum(requestsTotal, map[string]string{"request": "CreateTopics"}) == 2 &&
			s.Sum(requestsTotal, map[string]string{"request": "Produce"}) == float64(produces)
	})
	want := map[[2]string]float64{
		{"CreateTopics", "NONE"}:                 1,
		{"CreateTopics", "TOPIC_ALREADY_EXISTS"}: 1,
	}
	for code, n := range produced {
		want[[2]string{"Produce", errcode.Name(code)}] += float64(n)
	}
	for k, w := range want {
		if got := s.Value(errorsTotal, map[string]string{"request": k[0], "error": k[1]}); got != w {
			t.Errorf("errors{request=%s,error=%s} = %v, want %v", k[0], k[1], got, w)
		}
	}
	for _, api := range []string{"Produce", "CreateTopics"} {
		var w float64
		for k, n := range want {
			if k[0] == api {
				w += n
			}
		}
		if got := s.Sum(errorsTotal, map[string]string{"request": api}); got != w {
			t.Errorf("%v error codes counted for %s, want %v", got, api, w)
		}
	}
}
