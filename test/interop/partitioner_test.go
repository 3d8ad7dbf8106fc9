package interop

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// murmur2 is Kafka's murmur2 (Utils.murmur2 in the Java client): 32-bit
// MurmurHash2 with seed 0x9747b28c, the tail read little-endian.
func murmur2(data []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// javaPartition is where Java's default partitioner puts a keyed record:
// toPositive(murmur2(key)) % numPartitions, toPositive masking the sign bit.
func javaPartition(key []byte, partitions int32) int32 {
	return (murmur2(key) & 0x7fffffff) % partitions
}

// TestMurmur2JavaVectors pins our murmur2 to values computed by Kafka's
// Java Utils.murmur2 (Kafka's UtilsTest, and vectors other ports copied
// from the Java implementation).
func TestMurmur2JavaVectors(t *testing.T) {
	for key, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc":   479470107,
		"1":     -1993445489,
		"12":    126087238,
		"123":   -267702483,
		"1234":  -1614185708,
		"12345": -1188365604,
	} {
		if got := murmur2([]byte(key)); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", key, got, want)
		}
	}
}

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
		if want := javaPartition(r.Key, partitions); r.Partition != want {
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
