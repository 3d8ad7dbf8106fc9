package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// AddController starts one more node with both roles whose id is not in
// controller.quorum.voters: it joins the metadata quorum as an observer
// (a Raft non-voter on its CONTROLLER listener) until AddRaftVoter makes
// it a voter. Its id is the next after the nodes so far; voters lists the
// nodes it is told to contact (the current voters).
func (c *Cluster) AddController(voters []*Broker, overrides ...string) *Broker {
	c.t.Helper()
	id := len(c.Nodes) + 1
	ports := freePorts(c.t, 2)
	var vs []string
	for _, b := range voters {
		vs = append(vs, fmt.Sprintf("%d@%s", b.nodeID, b.voterAddr))
	}
	b := &Broker{t: c.t, Dir: c.t.TempDir(), nodeID: int32(id), voter: true, voterAddr: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	b.Overrides = append([]string{
		"node.id=" + strconv.Itoa(id),
		"process.roles=broker,controller",
		"log.dirs=" + b.Dir,
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[0], ports[1]),
		"controller.quorum.voters=" + strings.Join(vs, ","),
	}, clusterDefaults...)
	b.Overrides = append(b.Overrides, overrides...)
	c.Nodes = append(c.Nodes, b)
	b.launch()
	c.t.Cleanup(b.Kill)
	b.awaitStarted()
	return b
}

// NodeID is the node's id (cluster nodes only).
func (b *Broker) NodeID() int32 { return b.nodeID }
