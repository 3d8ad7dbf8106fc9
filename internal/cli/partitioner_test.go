package cli

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Java's Utils.murmur2 of these keys, from Kafka's UtilsTest
// (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
var javaMurmur2 = map[string]int32{
	"21":                         -973932308,
	"foobar":                     -790332482,
	"a-little-bit-long-string":   -985981536,
	"a-little-bit-longer-string": -1486304829,
	"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
	"abc": 479470107,
}

// javaPartition is Java's DefaultPartitioner for keyed records:
// Utils.toPositive(murmur2(key)) % numPartitions.
func javaPartition(hash int32, n int) int {
	return int(hash&0x7fffffff) % n
}

func TestDefaultPartitionerMatchesJava(t *testing.T) {
	p, err := parsePartitioner("default")
	if err != nil {
		t.Fatal(err)
	}
	tp := p.ForTopic("t")
	for key, hash := range javaMurmur2 {
		for _, n := range []int{1, 3, 6, 7, 50, 1000} {
			r := &kgo.Record{Key: []byte(key)}
			if got, want := tp.Partition(r, n), javaPartition(hash, n); got != want {
				t.Errorf("key %q over %d partitions: partition %d, Java %d", key, n, got, want)
			}
			if !tp.RequiresConsistency(r) {
				t.Errorf("key %q: a keyed record must stick to its hash partition", key)
			}
		}
	}
	// The vectors themselves pin the expectation: e.g. "foobar" over 3
	// partitions is (-790332482 & 0x7fffffff) % 3 = 1357151166 % 3 = 0.
	if got := tp.Partition(&kgo.Record{Key: []byte("foobar")}, 3); got != 0 {
		t.Errorf("foobar over 3 partitions = %d, want 0", got)
	}
}

func TestDefaultPartitionerStickyForKeyless(t *testing.T) {
	p, _ := parsePartitioner("default")
	tp := p.ForTopic("t")
	first := tp.Partition(&kgo.Record{}, 12)
	for range 50 {
		if got := tp.Partition(&kgo.Record{}, 12); got != first {
			t.Fatalf("keyless record moved from %d to %d without a new batch", first, got)
		}
	}
	if tp.RequiresConsistency(&kgo.Record{}) {
		t.Error("keyless records may go to any partition")
	}
}
