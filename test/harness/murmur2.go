package harness

// Murmur2 is Kafka's murmur2 (Utils.murmur2 in the Java client): 32-bit
// MurmurHash2 with seed 0x9747b28c, the tail read little-endian. Written
// here from its definition, so partitioning tests do not trust the
// partitioner of the client under test.
func Murmur2(data []byte) int32 {
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

// JavaPartition is where Java's default partitioner puts a keyed record:
// toPositive(murmur2(key)) % partitions, toPositive masking the sign bit.
func JavaPartition(key []byte, partitions int32) int32 {
	return (Murmur2(key) & 0x7fffffff) % partitions
}
