package interop

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// perTopic is how many records each producer writes per codec: enough
// for multi-record (and so really compressed) batches.
const perTopic = 40

func codecTopic(client, codec string) string { return fmt.Sprintf("codec.%s.%s", client, codec) }

// producers are the clients under test, each with a way to produce into
// a single-partition topic with a codec. They return the acks, or nil
// when the client does not report them (kcat).
var producers = []struct {
	name        string
	indexHeader bool // whether the client sets per-record headers
	need        func(t *testing.T, codec string)
	produce     func(t *testing.T, b *harness.Broker, topic, codec string, recs []rec) []ack
}{
	{"franz-go", true, func(*testing.T, string) {}, func(t *testing.T, b *harness.Broker, topic, codec string, recs []rec) []ack {
		return produceKgo(t, b, topic, codec, recs)
	}},
	{"kcat", false, func(t *testing.T, _ string) { needKcat(t) }, func(t *testing.T, b *harness.Broker, topic, codec string, recs []rec) []ack {
		produceKcat(t, b, topic, codec, recs)
		return nil
	}},
	{kafkaPython, true, func(t *testing.T, codec string) { needPython(t, kafkaPython, codec) }, func(t *testing.T, b *harness.Broker, topic, codec string, recs []rec) []ack {
		return producePy(t, b, kafkaPython, topic, codec, "", recs, true)
	}},
	{confluent, true, func(t *testing.T, codec string) { needPython(t, confluent, codec) }, func(t *testing.T, b *harness.Broker, topic, codec string, recs []rec) []ack {
		return producePy(t, b, confluent, topic, codec, "", recs, true)
	}},
}

// TestCodecMatrix has every client produce with every codec, then every
// client consume everything every client produced: values, keys (null
// ones too), headers, order and offsets must survive each pairing. It
// also checks, through franz-go's view of the batch attributes, that the
// broker stored each batch with the codec the producer chose.
func TestCodecMatrix(t *testing.T) {
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)

	want := map[string][]rec{} // by topic, for the producers that ran
	for _, p := range producers {
		for _, codec := range codecs {
			t.Run("produce/"+p.name+"/"+codec, func(t *testing.T) {
				p.need(t, codec)
				topic := codecTopic(p.name, codec)
				createTopic(t, adm, topic, 1, nil)
				recs := makeRecords(p.name, codec, perTopic, p.indexHeader)
				if acks := p.produce(t, b, topic, codec, recs); acks != nil {
					checkAcks(t, p.name, acks, len(recs))
				}
				want[topic] = recs
			})
		}
	}
	if len(want) == 0 {
		t.Fatal("no producer could run")
	}

	counts := map[string]int{}
	var pyTopics []pyTopic
	for topic, recs := range want {
		counts[topic] = len(recs)
		pyTopics = append(pyTopics, pyTopic{Topic: topic, Partitions: 1, Count: len(recs)})
	}
	checkAll := func(t *testing.T, who string, got []rec) {
		t.Helper()
		for topic, recs := range want {
			checkSingle(t, who, topic, got, recs)
		}
	}

	// librdkafka 2.0.2 infers lz4 support from FindCoordinator v0 being
	// listed (lz4 came with Kafka 0.8.2, as did group coordinators); until
	// the broker serves groups it sends lz4 batches uncompressed.
	librdkafkaLz4 := advertises(t, b, kmsg.FindCoordinator)
	t.Run("consume/franz-go", func(t *testing.T) {
		krs := consumeKgo(t, b, counts)
		got := make([]rec, len(krs))
		for i, kr := range krs {
			got[i] = fromKgo(kr)
			codec := topicCodec(kr.Topic)
			if codec == "lz4" && !librdkafkaLz4 && kr.Attrs.CompressionType() == 0 &&
				(kr.Topic == codecTopic("kcat", codec) || kr.Topic == codecTopic(confluent, codec)) {
				if kr.Offset == 0 {
					t.Logf("%s: librdkafka sent lz4 uncompressed: the broker does not list FindCoordinator v0 yet", kr.Topic)
				}
				continue
			}
			if kr.Attrs.CompressionType() != codecIDs[codec] {
				t.Errorf("%s offset %d: batch codec %d, want %d (%s) as the producer sent it",
					kr.Topic, kr.Offset, kr.Attrs.CompressionType(), codecIDs[codec], codec)
			}
		}
		checkAll(t, "franz-go", got)
	})
	t.Run("consume/kcat", func(t *testing.T) {
		needKcat(t)
		var got []rec
		for topic := range want {
			got = append(got, consumeKcat(t, b, topic)...)
		}
		checkAll(t, "kcat", got)
	})
	t.Run("consume/"+kafkaPython, func(t *testing.T) {
		for topic := range want {
			needPython(t, kafkaPython, topicCodec(topic))
		}
		checkAll(t, kafkaPython, consumePy(t, b, kafkaPython, pyTopics))
	})
	t.Run("consume/"+confluent, func(t *testing.T) {
		needPython(t, confluent, "none")
		checkAll(t, confluent, consumePy(t, b, confluent, pyTopics))
	})
}

// topicCodec is the codec part of a codecTopic name.
func topicCodec(topic string) string {
	for _, c := range codecs {
		if len(topic) > len(c) && topic[len(topic)-len(c)-1:] == "."+c {
			return c
		}
	}
	return ""
}

// advertises reports whether the broker lists the API in ApiVersions.
func advertises(t *testing.T, b *harness.Broker, key kmsg.Key) bool {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(harness.Ctx(t, opTimeout), b.Client())
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key.Int16() {
			return true
		}
	}
	return false
}
