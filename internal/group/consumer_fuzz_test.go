package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzConsumerHeartbeat feeds ConsumerGroupHeartbeat requests decoded
// from arbitrary bytes (as the broker decodes them off the wire) to a
// coordinator, a few in a row, and checks the group's invariants after
// each: no panic, no partition owned by two members, epochs consistent.
func FuzzConsumerHeartbeat(f *testing.F) {
	seed := func(epoch int32, member string, owned ...int32) []byte {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, "g", member, epoch
		r.RebalanceTimeoutMillis = 30000
		r.SubscribedTopicNames = []string{"t1", "t2"}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tid("t1"), Partitions: owned})
		}
		return r.AppendTo(nil)
	}
	f.Add(seed(0, "a"), seed(0, "b"), seed(1, "a", 0, 1, 2, 3))
	f.Add(seed(0, "a"), seed(1, "a", 0, 1), seed(-1, "a"))
	f.Add(seed(0, "a"), seed(7, "a", 9, -1), seed(1, "a", 0, 0, 0))
	f.Fuzz(func(t *testing.T, r1, r2, r3 []byte) {
		e := newCEnv(t)
		for _, raw := range [][]byte{r1, r2, r3} {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version = 1
			if err := req.ReadFrom(raw); err != nil {
				continue
			}
			hr := ConsumerHeartbeatRequest{
				Version: req.Version, Group: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
				InstanceID: req.InstanceID, RackID: req.RackID, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
				SubscribedTopics: req.SubscribedTopicNames, SubscribedRegex: req.SubscribedTopicRegex,
				ServerAssignor: req.ServerAssignor,
			}
			if req.Topics != nil {
				hr.Owned = []TopicPartitionsByID{}
				for _, tp := range req.Topics {
					hr.Owned = append(hr.Owned, TopicPartitionsByID{TopicID: tp.TopicID, Partitions: tp.Partitions})
				}
			}
			e.c.ConsumerHeartbeat(context.Background(), hr)
			e.clock.Advance(time.Second)
			checkInvariants(t, e.c)
		}
	})
}

// checkInvariants: within every consumer group no partition is owned
// (assigned or pending revocation) by two members, and no member is past
// the group epoch.
func checkInvariants(t *testing.T, c *Coordinator) {
	t.Helper()
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		if cg := g.consumer; cg != nil {
			seen := map[tidp]string{}
			for id, m := range cg.members {
				if m.epoch > cg.epoch || cg.targetEpoch > cg.epoch {
					t.Fatalf("member %s epoch %d, target %d, group %d", id, m.epoch, cg.targetEpoch, cg.epoch)
				}
				for _, s := range []partSet{m.assigned, m.pending} {
					for tp, ps := range s {
						for _, p := range ps {
							if o, dup := seen[tidp{tp, p}]; dup {
								t.Fatalf("partition %d owned by %s and %s", p, o, id)
							}
							seen[tidp{tp, p}] = id
						}
					}
				}
			}
		}
		g.mu.Unlock()
	}
}
