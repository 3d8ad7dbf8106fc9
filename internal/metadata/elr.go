package metadata

import (
	"slices"
	"strconv"
)

// Eligible leader replicas (KIP-966, part 1).
//
// A leader does not advance the high watermark while the committed ISR is
// smaller than min.insync.replicas (replica.advanceHWLocked). So a replica
// that leaves the ISR when, or after, the ISR drops below that minimum
// holds every committed record: the high watermark was at most its log
// end when it left and has not moved since. Such replicas are the
// partition's ELR, and may lead when no ISR member can:
//
//   - A change that leaves the ISR below min.insync.replicas adds the
//     replicas it removed from the ISR to the ELR.
//   - The ELR is emptied whenever the ISR has min.insync.replicas members
//     (the high watermark may advance without the ELR from then on), and
//     by an unclean election (the new leader's log is the reference).
//   - A replica joining the ISR leaves the ELR; one that is no longer a
//     replica (reassignment) leaves it too.
//   - A broker that comes back from a restart in which its logs may have
//     lost unflushed records (a power loss: BrokerRegistration's
//     PreviousBrokerEpoch does not name its last epoch) leaves every ELR,
//     and where it was the ISR's only member while the ELR held others, it
//     hands its place to an ELR member (dropUnflushed): it may no longer
//     hold what was committed, and they do.
//
// Election (electClean) takes an eligible ISR member first, else an
// eligible ELR member, which becomes the ISR's only member; the ISR
// members it replaces join the ELR by the first rule, as they too hold
// every committed record.
//
// The leader's min.insync.replicas must be at least the state machine's
// (minISR), or a leader could advance the high watermark past a replica
// the state machine counts as eligible: brokers use the larger of theirs
// and Image.MinISR.

// minISR is topic t's min.insync.replicas as the state machine knows it:
// the topic's override, else the dynamic cluster default, else the static
// default the bootstrap recorded, else Kafka's default 1.
func (im *Image) minISR(t *Topic) int {
	const key = "min.insync.replicas"
	for _, v := range []string{t.Configs[key], im.brokerConfigs[ClusterDefaultResource][key]} {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 {
			return n
		}
	}
	return max(int(im.defaultMinISR), 1)
}

// MinISR is topic t's min.insync.replicas as the state machine resolves it
// (minISR). A leader must not use a smaller value.
func (im *Image) MinISR(t *Topic) int { return im.minISR(t) }

// nextELR is the ELR of next, a change of prev, by the rules above;
// tainted (-1: none) is a broker that may have lost unflushed records and
// is left out whatever the rules say.
func (im *Image) nextELR(t *Topic, prev, next Partition, tainted int32) []int32 {
	if next.LeaderRecoveryState == LeaderRecovering || len(next.ISR) >= im.minISR(t) {
		return nil
	}
	cand := minus(slices.Concat(next.ELR, minus(prev.ISR, next.ISR)), append(slices.Clone(next.ISR), tainted))
	if out := inReplicaOrder(next.Replicas, cand); len(out) > 0 {
		return out
	}
	return nil
}

// electClean is the election rule of a partition whose leader is gone:
// the first eligible ISR member other than except, with the ISR as it is;
// else the first eligible ELR member, as the ISR's only member; else -1
// (offline) with the ISR as it is.
func (im *Image) electClean(p Partition, isr []int32, except int32) (int32, []int32) {
	if l := im.electFrom(p.Replicas, isr, except); l != -1 {
		return l, isr
	}
	if l := im.electFrom(p.Replicas, p.ELR, except); l != -1 {
		return l, []int32{l}
	}
	return -1, isr
}

// dropUnflushed is p after broker id, fenced, registered again after a
// restart in which its logs may have lost unflushed records: id leaves the
// ELR, and if it is the only ISR member while the ELR holds others, the
// first eligible ELR member (else the first) takes its place, and leads if
// it is eligible. A partition with no other ELR member keeps id: no
// replica is known to hold more (Kafka elects such a last leader too).
func dropUnflushed(im *Image, p Partition, id int32) Partition {
	p.ELR = without(p.ELR, id)
	if len(p.ISR) != 1 || p.ISR[0] != id || len(p.ELR) == 0 {
		return p
	}
	pick := im.electFrom(p.Replicas, p.ELR, -1)
	p.Leader = pick
	if pick == -1 {
		pick = p.ELR[0]
	}
	p.ISR = []int32{pick}
	return p
}

// clearSatisfiedELRs empties the ELR of every partition whose ISR now has
// min.insync.replicas members, after a config change lowered the minimum.
func clearSatisfiedELRs(im *Image) {
	e := newPartitionEdit(im)
	for _, t := range im.sortedTopics() {
		for _, p := range t.Partitions {
			if len(p.ELR) == 0 {
				continue
			}
			if np, ok := im.finish(t, p, p, -1); ok {
				e.put(t, np)
			}
		}
	}
}
