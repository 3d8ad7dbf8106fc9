package broker

// Kafka treats the topic, partition, group and resource lists of a request
// as sets: it keeps them in maps, or refuses an entry named twice. Served
// as lists, a few kilobytes naming one big topic a thousand times would
// make a response of hundreds of megabytes. Each handler says what Kafka
// does with duplicates and does the same through distinct, or, where
// Kafka answers every copy, answers each name once.

// distinct describes the duplicates of a request list. idx holds, for each
// distinct key in order of first appearance, the position of its last
// occurrence (Kafka's request maps keep the last entry of a key); repeated
// holds the keys that occur more than once, and is nil when none do.
func distinct[T any, K comparable](items []T, key func(T) K) (idx []int, repeated map[K]bool) {
	pos := make(map[K]int, len(items)) // key -> its place in idx
	for i, it := range items {
		k := key(it)
		if p, ok := pos[k]; ok {
			idx[p] = i
			if repeated == nil {
				repeated = make(map[K]bool)
			}
			repeated[k] = true
			continue
		}
		pos[k] = len(idx)
		idx = append(idx, i)
	}
	return idx, repeated
}

// topicKey names a topic in a request: by name, or (byID) by topic id.
type topicKey struct {
	byID bool
	name string
	id   [16]byte
}

func topicByName(name string) topicKey { return topicKey{name: name} }

// partitionKey names one partition of a request.
type partitionKey struct {
	topic     topicKey
	partition int32
}

// topicPartitions is one topic of a request with its partitions.
type topicPartitions[T, P any] struct {
	topic T
	parts []P
}

// distinctPartitions regroups a request's topic and partition lists so
// that each partition appears once (its last entry), in order of first
// appearance, under the first entry of its topic; entries naming the same
// topic are merged. repeated holds the partitions named more than once.
func distinctPartitions[T, P any](topics []T, topic func(T) topicKey, parts func(T) []P, partition func(P) int32) (
	out []topicPartitions[T, P], repeated map[partitionKey]bool) {
	type ref struct{ t, p int }
	var refs []ref
	for i, t := range topics {
		for j := range parts(t) {
			refs = append(refs, ref{i, j})
		}
	}
	idx, repeated := distinct(refs, func(r ref) partitionKey {
		t := topics[r.t]
		return partitionKey{topic(t), partition(parts(t)[r.p])}
	})
	group := make(map[topicKey]int) // topic -> its place in out
	for _, t := range topics {
		if _, ok := group[topic(t)]; !ok {
			group[topic(t)] = len(out)
			out = append(out, topicPartitions[T, P]{topic: t})
		}
	}
	for _, i := range idx {
		r := refs[i]
		t := topics[r.t]
		g := &out[group[topic(t)]]
		g.parts = append(g.parts, parts(t)[r.p])
	}
	return out, repeated
}

// identity is the key of a list of plain names.
func identity(s string) string { return s }
