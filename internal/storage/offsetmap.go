package storage

// offsetMap maps each key of the dirty section to the offset of its latest
// record: the cleaner's view of "which record wins".
//
// Kafka's SkimpyOffsetMap stores 16-byte MD5 digests of the keys in a
// fixed buffer, so a hash collision can drop a live record. Here the keys
// themselves are the map keys: exact, at the price of memory that grows
// with key length. The budget (log.cleaner.dedupe.buffer.size) is charged
// len(key)+entryOverhead bytes per distinct key, which approximates what
// a Go map of strings to int64 really costs.
type offsetMap struct {
	m      map[string]int64
	used   int64 // bytes charged so far
	budget int64
}

// entryOverhead approximates a map[string]int64 entry's cost besides the
// key bytes: string header, value, hash-table slot and load-factor slack.
const entryOverhead = 48

// newOffsetMap makes a map charged against budget bytes (the default,
// 128 MiB, when budget <= 0).
func newOffsetMap(budget int64) *offsetMap {
	if budget <= 0 {
		budget = defaultDedupeBufferBytes
	}
	return &offsetMap{m: make(map[string]int64), budget: budget}
}

// get returns the latest offset recorded for key.
func (o *offsetMap) get(key []byte) (int64, bool) {
	off, ok := o.m[string(key)] // no allocation for a lookup
	return off, ok
}

// cost is what putting keys would add to the budget (keys already present,
// or repeated within keys, cost nothing more). seen is scratch space the
// caller reuses between calls.
func (o *offsetMap) cost(keys [][]byte, seen map[string]struct{}) int64 {
	clear(seen)
	var c int64
	for _, k := range keys {
		if _, ok := o.m[string(k)]; ok {
			continue
		}
		if _, ok := seen[string(k)]; ok {
			continue
		}
		seen[string(k)] = struct{}{}
		c += int64(len(k)) + entryOverhead
	}
	return c
}

// fits reports whether c more bytes stay within the budget.
func (o *offsetMap) fits(c int64) bool { return o.used+c <= o.budget }

// put records offset as the latest for key. Offsets arrive in log order,
// so a later put always wins.
func (o *offsetMap) put(key []byte, offset int64) {
	if _, ok := o.m[string(key)]; !ok {
		o.used += int64(len(key)) + entryOverhead
	}
	o.m[string(key)] = offset
}

func (o *offsetMap) len() int { return len(o.m) }
