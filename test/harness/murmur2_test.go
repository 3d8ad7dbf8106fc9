package harness

import "testing"

// TestMurmur2JavaVectors pins Murmur2 to values computed by Kafka's Java
// Utils.murmur2 (Kafka's UtilsTest, and vectors other ports copied from
// the Java implementation).
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
		if got := Murmur2([]byte(key)); got != want {
			t.Errorf("Murmur2(%q) = %d, want %d", key, got, want)
		}
	}
	if got := JavaPartition([]byte("foobar"), 3); got != 0 {
		t.Errorf("foobar over 3 partitions = %d, want 0", got)
	}
}
