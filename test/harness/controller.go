package harness

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerSeenBy is the active controller named in addr's Metadata
// answer (a node that knows none names itself).
func ControllerSeenBy(addr string) (int32, error) {
	resp, err := metadataOf(addr, []kmsg.MetadataRequestTopic{}) // no topics: brokers and controller only
	if err != nil {
		return -1, err
	}
	return resp.ControllerID, nil
}

// AgreedController waits until every running node's Metadata answer names
// the same active controller, none of except, and returns it. A node that
// knows no controller names itself, so agreement of all of them means the
// one named is the quorum's leader.
func (c *Cluster) AgreedController(timeout time.Duration, except ...int32) int32 {
	c.t.Helper()
	var id int32
	WaitFor(c.t, timeout, "the nodes to agree on the active controller", func() bool {
		id = -1
		for _, b := range c.Nodes {
			if !b.Running() {
				continue
			}
			got, err := ControllerSeenBy(b.Addr)
			if err != nil || got <= 0 || (id != -1 && got != id) {
				return false
			}
			for _, e := range except {
				if got == e {
					return false
				}
			}
			id = got
		}
		return id > 0
	})
	return id
}
