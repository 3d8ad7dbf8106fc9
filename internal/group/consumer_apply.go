package group

// A consumer group changes only by records: a request computes the
// records its change needs, writes them to __consumer_offsets, and once
// they are committed applies them here. Replaying the partition at load
// applies the same records the same way, so what a restarted coordinator
// rebuilds is exactly what the previous one served.

// apply changes cg by one record.
func (cg *consumerGroup) apply(r cgRecord) {
	switch r.kind {
	case keyConsumerGroupMetadata:
		cg.epoch = 0
		if !r.tombstone {
			cg.epoch = r.epoch
		}
	case keyConsumerGroupPartitionMeta:
		cg.topics = map[string]topicMeta{}
		if !r.tombstone {
			cg.topics = r.topics
		}
	case keyConsumerGroupTargetMetadata:
		cg.targetEpoch = 0
		if !r.tombstone {
			cg.targetEpoch = r.epoch
		}
	case keyConsumerGroupTargetMember:
		if r.tombstone {
			delete(cg.target, r.member)
		} else {
			cg.target[r.member] = r.target
		}
	case keyConsumerGroupMemberMetadata:
		if r.tombstone {
			cg.removeMember(r.member)
			return
		}
		m := cg.member(r.member)
		if m.sub.instanceID != "" && cg.static[m.sub.instanceID] == m.id {
			delete(cg.static, m.sub.instanceID)
		}
		m.sub = r.sub
		if m.sub.instanceID != "" {
			cg.static[m.sub.instanceID] = m.id
		}
	case keyConsumerGroupCurrentMember:
		if r.tombstone {
			// The member is leaving: it owns nothing any more. Its
			// metadata tombstone removes it.
			if m := cg.members[r.member]; m != nil {
				m.memberAssignment = newMemberAssignment()
				m.epoch = leaveEpoch
			}
			return
		}
		cg.member(r.member).memberAssignment = r.current
	}
}

// member returns member id, creating it (epoch 0, nothing assigned).
func (cg *consumerGroup) member(id string) *cmember {
	m := cg.members[id]
	if m == nil {
		m = &cmember{id: id, memberAssignment: newMemberAssignment()}
		cg.members[id] = m
	}
	return m
}

func (cg *consumerGroup) removeMember(id string) {
	m := cg.members[id]
	if m == nil {
		return
	}
	m.stopTimers()
	if m.sub.instanceID != "" && cg.static[m.sub.instanceID] == id {
		delete(cg.static, m.sub.instanceID)
	}
	delete(cg.members, id)
}
