package metadata

// place assigns replicas for count new partitions numbered from first over
// the given brokers (sorted ids), like Kafka's rack-unaware assignment: the
// leader of partition p is brokers[(start+p) % n], and its followers follow
// it at a gap that grows every n partitions, so followers of one leader are
// spread over the others rather than always being its next neighbour. No
// broker appears twice in one partition. rf must be in [1, n]. Racks are
// not considered yet.
func place(brokers []int32, first, count, rf, start int) [][]int32 {
	n := len(brokers)
	out := make([][]int32, count)
	for i := range out {
		p := first + i
		lead := (start + p) % n
		replicas := make([]int32, rf)
		replicas[0] = brokers[lead]
		if n > 1 {
			shift := (start + p/n) % (n - 1)
			for j := 1; j < rf; j++ {
				// offset in [1, n-1]: never the leader, distinct for each j.
				off := 1 + (shift+j-1)%(n-1)
				replicas[j] = brokers[(lead+off)%n]
			}
		}
		out[i] = replicas
	}
	return out
}
