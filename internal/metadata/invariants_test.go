package metadata

import (
	"fmt"
	"slices"
)

// checkImage checks what must hold of every image, whatever commands led
// to it:
//
//  1. Replicas are distinct; the ISR is a non-empty subset of them, in
//     replica order.
//  2. The leader is -1 (offline) or in the ISR.
//  3. A leader is registered and unfenced; a leader in controlled shutdown
//     has no other eligible ISR member (its leadership could not move).
//  4. A fenced broker is in an ISR only as its only member, and then the
//     partition is offline.
//  5. An unfenced broker in controlled shutdown is in an ISR only as its
//     only member.
//  6. An offline partition has no eligible ISR member (else the election
//     rule would have elected it).
//  7. A recovering leader (after an unclean election) is the only ISR
//     member.
//  8. The ELR is a set of replicas in replica order, disjoint from the
//     ISR, and empty while the ISR has min.insync.replicas members or the
//     leader is recovering; an offline partition has no eligible ELR
//     member either.
func checkImage(im *Image) error {
	for _, t := range im.sortedTopics() {
		for _, p := range t.Partitions {
			if err := checkPartition(im, t, p); err != nil {
				return fmt.Errorf("%s-%d %+v: %w", t.Name, p.Partition, p, err)
			}
		}
	}
	return nil
}

func checkPartition(im *Image, t *Topic, p Partition) error {
	for i, r := range p.Replicas {
		if slices.Contains(p.Replicas[:i], r) {
			return fmt.Errorf("replica %d twice", r)
		}
	}
	if len(p.ISR) == 0 {
		return fmt.Errorf("empty ISR")
	}
	if !slices.Equal(p.ISR, inReplicaOrder(p.Replicas, p.ISR)) {
		return fmt.Errorf("ISR not a set of replicas in replica order")
	}
	if p.Leader != -1 {
		if !slices.Contains(p.ISR, p.Leader) {
			return fmt.Errorf("leader not in ISR")
		}
		b := im.brokers[p.Leader]
		if b == nil || b.Fenced {
			return fmt.Errorf("leader %d unregistered or fenced", p.Leader)
		}
		if b.InControlledShutdown && im.electFrom(p.Replicas, p.ISR, p.Leader) != -1 {
			return fmt.Errorf("leader %d is shutting down with a movable leadership", p.Leader)
		}
	} else if im.electFrom(p.Replicas, p.ISR, -1) != -1 {
		return fmt.Errorf("offline with an eligible ISR member")
	}
	for _, r := range p.ISR {
		b := im.brokers[r]
		if b == nil {
			return fmt.Errorf("ISR member %d not registered", r)
		}
		if b.Fenced && (len(p.ISR) > 1 || p.Leader != -1) {
			return fmt.Errorf("fenced broker %d in ISR", r)
		}
		if b.InControlledShutdown && len(p.ISR) > 1 {
			return fmt.Errorf("shutting-down broker %d in a shared ISR", r)
		}
	}
	if p.LeaderRecoveryState == LeaderRecovering && len(p.ISR) > 1 {
		return fmt.Errorf("recovering with ISR of %d", len(p.ISR))
	}
	if !slices.Equal(p.ELR, inReplicaOrder(p.Replicas, p.ELR)) {
		return fmt.Errorf("ELR not a set of replicas in replica order")
	}
	if len(minus(p.ELR, p.ISR)) != len(p.ELR) {
		return fmt.Errorf("ELR shares members with the ISR")
	}
	if len(p.ELR) > 0 && (len(p.ISR) >= im.minISR(t) || p.LeaderRecoveryState == LeaderRecovering) {
		return fmt.Errorf("ELR kept with ISR of %d, min.insync.replicas %d, recovery state %d", len(p.ISR), im.minISR(t), p.LeaderRecoveryState)
	}
	if p.Leader == -1 && im.electFrom(p.Replicas, p.ELR, -1) != -1 {
		return fmt.Errorf("offline with an eligible ELR member")
	}
	return nil
}

// checkStep checks what must hold from one image to the next:
//
//  1. Partition and leader epochs never go back; an unchanged partition
//     keeps both; a changed one bumps its partition epoch once per change
//     (a command makes at most maxChanges changes to one partition: one,
//     but two for a legacy registration replacing an incarnation, which
//     fences the old one and elects the new), and its leader epoch once per
//     leader change, so at least once when the leader differs.
//  2. Every broker that joins an ISR, and every ISR member of a new
//     partition, is eligible, except an ELR member that takes the place
//     of an ISR's only member (dropUnflushed) and is then its only member.
//  3. Broker epochs: the same incarnation keeps its epoch; a new
//     non-legacy incarnation gets a larger one, starts fenced and is in no
//     controlled shutdown.
func checkStep(prev, next *Image, maxChanges int32) error {
	for id, nt := range next.topicsByID {
		pt := prev.topicsByID[id]
		for i, np := range nt.Partitions {
			if pt == nil || i >= len(pt.Partitions) {
				for _, r := range np.ISR {
					if !next.eligible(r) {
						return fmt.Errorf("%s-%d created with ineligible ISR member %d", nt.Name, i, r)
					}
				}
				if np.LeaderEpoch != 0 || np.PartitionEpoch != 0 {
					return fmt.Errorf("%s-%d created at epochs %d/%d", nt.Name, i, np.LeaderEpoch, np.PartitionEpoch)
				}
				continue
			}
			pp := pt.Partitions[i]
			same := np.Leader == pp.Leader && slices.Equal(np.ISR, pp.ISR) && slices.Equal(np.Replicas, pp.Replicas) &&
				np.LeaderRecoveryState == pp.LeaderRecoveryState && slices.Equal(np.ELR, pp.ELR)
			dPE, dLE := np.PartitionEpoch-pp.PartitionEpoch, np.LeaderEpoch-pp.LeaderEpoch
			ok := dPE == 0 && dLE == 0
			if !ok && (!same || maxChanges > 1) {
				ok = dPE >= 1 && dPE <= maxChanges && dLE >= 0 && dLE <= dPE && (np.Leader == pp.Leader || dLE >= 1)
				if maxChanges == 1 {
					ok = ok && (dLE == 1) == (np.Leader != pp.Leader)
				}
			}
			if !ok {
				return fmt.Errorf("%s-%d: %+v -> %+v: epochs moved by %d/%d", nt.Name, i, pp, np, dLE, dPE)
			}
			for _, r := range np.ISR {
				fromELR := len(np.ISR) == 1 && slices.Contains(pp.ELR, r)
				if !slices.Contains(pp.ISR, r) && !next.eligible(r) && !fromELR {
					return fmt.Errorf("%s-%d: ineligible broker %d joined the ISR (%v -> %v)", nt.Name, i, r, pp.ISR, np.ISR)
				}
			}
		}
	}
	for id, nb := range next.brokers {
		pb := prev.brokers[id]
		if pb == nil || pb.Incarnation == nb.Incarnation {
			if pb != nil && pb.Epoch != nb.Epoch {
				return fmt.Errorf("broker %d: same incarnation, epoch %d -> %d", id, pb.Epoch, nb.Epoch)
			}
			continue
		}
		if nb.Incarnation != ([16]byte{}) && (nb.Epoch <= pb.Epoch || !nb.Fenced || nb.InControlledShutdown) {
			return fmt.Errorf("broker %d restarted: %+v -> %+v", id, *pb, *nb)
		}
	}
	return nil
}
