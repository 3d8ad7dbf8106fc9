package metadata

import (
	"cmp"
	"slices"
)

// placementBroker is a broker new replicas may be placed on.
type placementBroker struct {
	id   int32
	rack string // "" = no rack; such brokers count as one rack of their own
}

// placementBrokers returns the brokers placement may use: registered,
// unfenced and not shutting down, sorted by id.
func (im *Image) placementBrokers() []placementBroker {
	var out []placementBroker
	for _, b := range im.brokers {
		if b.Eligible() {
			out = append(out, placementBroker{id: b.ID, rack: b.Rack})
		}
	}
	slices.SortFunc(out, func(a, b placementBroker) int { return cmp.Compare(a.id, b.id) })
	return out
}

// place assigns replicas for count new partitions numbered from first over
// the given brokers (sorted by id), in the manner of Kafka's assignment
// (our own code):
//
//   - The brokers are put in a ring. With more than one rack the ring
//     alternates racks (racks in name order, each rack's brokers in id
//     order, one from each rack in turn), so neighbours are on different
//     racks.
//   - The leader of partition p is ring[(start+p) % n]: leaders spread
//     evenly, exactly so over every n consecutive partitions.
//   - Followers are taken walking the ring from the leader, beginning at a
//     gap that grows every n partitions, so the followers of one leader
//     are spread over the others rather than always being its next
//     neighbours. With racks, a broker on a rack the partition already
//     uses is skipped while some rack is still unused.
//
// No broker appears twice in one partition. rf must be in [1, n].
func place(brokers []placementBroker, first, count, rf, start int) [][]int32 {
	ring, racks := rackAlternated(brokers)
	n := len(ring)
	out := make([][]int32, count)
	for i := range out {
		p := first + i
		lead := (start + p) % n
		replicas := make([]int32, 1, rf)
		replicas[0] = ring[lead].id
		if n > 1 {
			shift := (start + p/n) % (n - 1)
			used := map[int]bool{lead: true}
			usedRacks := map[string]bool{ring[lead].rack: true}
			// Offsets 1..n-1 from the leader, starting at the shift: two
			// rounds at most (the first leaves no rack unused or fills
			// the partition; the second takes any unused broker).
			for k := 0; len(replicas) < rf && k < 2*(n-1); k++ {
				c := (lead + 1 + (shift+k)%(n-1)) % n
				if used[c] || (usedRacks[ring[c].rack] && len(usedRacks) < racks) {
					continue
				}
				used[c] = true
				usedRacks[ring[c].rack] = true
				replicas = append(replicas, ring[c].id)
			}
		}
		out[i] = replicas
	}
	return out
}

// rackAlternated orders brokers for placement and counts their racks. With
// one rack (or none) the order is by id.
func rackAlternated(brokers []placementBroker) ([]placementBroker, int) {
	byRack := map[string][]placementBroker{}
	for _, b := range brokers {
		byRack[b.rack] = append(byRack[b.rack], b)
	}
	if len(byRack) <= 1 {
		return brokers, len(byRack)
	}
	names := make([]string, 0, len(byRack))
	for r := range byRack {
		names = append(names, r)
	}
	slices.Sort(names)
	out := make([]placementBroker, 0, len(brokers))
	for round := 0; len(out) < len(brokers); round++ {
		for _, r := range names {
			if round < len(byRack[r]) {
				out = append(out, byRack[r][round])
			}
		}
	}
	return out, len(byRack)
}
