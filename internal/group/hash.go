package group

import "unicode/utf16"

// PartitionFor is the __consumer_offsets partition that holds group's
// state: abs(group.hashCode()) % n, with Java's String.hashCode (over
// UTF-16 code units) and Kafka's Utils.abs (which maps MinInt32 to 0).
// Matching Kafka keeps a group on the partition a Kafka cluster would use.
func PartitionFor(group string, n int32) int32 {
	if n <= 0 {
		return 0
	}
	return javaAbs(javaStringHash(group)) % n
}

func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

func javaAbs(n int32) int32 {
	switch {
	case n == -1<<31:
		return 0
	case n < 0:
		return -n
	default:
		return n
	}
}
