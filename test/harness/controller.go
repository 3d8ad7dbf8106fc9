package harness

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerSeenBy is the active controller named in addr's Metadata
// answer (a node that knows none names itself).
func ControllerSeenBy(addr string) (int32, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return -1, err
	}
	conn.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none: brokers and controller only
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return -1, err
	}
	return resp.(*kmsg.MetadataResponse).ControllerID, nil
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
