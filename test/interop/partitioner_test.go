package interop

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// TestKeyedPartitioningMatchesJava has each client produce keyed records
// to a 6-partition topic with its murmur2 partitioner (franz-go and
// kafka-python by default; librdkafka with partitioner=murmur2_random)
// and checks every record landed on Java's partition for its key.
func TestKeyedPartitioningMatchesJava(t *testing.T) {
	const partitions, keys = 6, 120
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)

	recs := make([]rec, keys)
	for i := range recs {
		// Lengths 1..n exercise every murmur2 tail case.
		key := fmt.Sprintf("%d-%s", i, "user"[:i%4])
		recs[i] = rec{Key: strp(key), Value: fmt.Sprintf("value of %s", key)}
	}

	produced := map[string]int{}
	clients := []struct {
		name    string
		produce func(t *testing.T, topic string)
	}{
		{"franz-go", func(t *testing.T, topic string) {
			// The harness client's partitioner is left at franz-go's default:
			// sticky for null keys, murmur2 for keyed records.
			cl := b.Client(kgo.ProducerLinger(0))
			krs := make([]*kgo.Record, len(recs))
			for i, r := range recs {
				krs[i] = &kgo.Record{Topic: topic, Key: []byte(*r.Key), Value: []byte(r.Value)}
			}
			produceSync(t, cl, krs...)
		}},
		{"kcat", func(t *testing.T, topic string) {
			needKcat(t)
			produceKcat(t, b, topic, "none", recs, "-X", "partitioner=murmur2_random")
		}},
		{kafkaPython, func(t *testing.T, topic string) {
			needPython(t, kafkaPython, "none")
			producePy(t, b, kafkaPython, topic, "none", "", recs, false)
		}},
		{confluent, func(t *testing.T, topic string) {
			needPython(t, confluent, "none")
			producePy(t, b, confluent, topic, "none", "murmur2_random", recs, false)
		}},
	}
	for _, c := range clients {
		t.Run("produce/"+c.name, func(t *testing.T) {
			topic := "keyed." + c.name
			createTopic(t, adm, topic, partitions, nil)
			c.produce(t, topic)
			produced[topic] = len(recs)
		})
	}
	if len(produced) == 0 {
		t.Fatal("no client could produce")
	}

	got := consumeKgo(t, b, produced)
	perTopic := map[string]map[int32]int{}
	for _, r := range got {
		if want := harness.JavaPartition(r.Key, partitions); r.Partition != want {
			t.Errorf("%s: key %q on partition %d, Java's murmur2 says %d", r.Topic, r.Key, r.Partition, want)
		}
		if perTopic[r.Topic] == nil {
			perTopic[r.Topic] = map[int32]int{}
		}
		perTopic[r.Topic][r.Partition]++
	}
	for topic, n := range produced {
		total := 0
		for _, c := range perTopic[topic] {
			total += c
		}
		if total != n {
			t.Errorf("%s: consumed %d records, want %d", topic, total, n)
		}
		if len(perTopic[topic]) < partitions {
			t.Errorf("%s: records on %d partitions; %d keys should reach all %d", topic, len(perTopic[topic]), keys, partitions)
		}
	}
}
