package verify

import (
	"errors"
	"fmt"
)

// What a fault in force holds (--overlap): the nodes whose process it
// acts on, and the partitions it moves. The loop that starts faults
// claims them while a fault starts; its heal releases them.

// claims are what one fault holds.
type claims struct {
	nodes []int32
	parts []tp
}

// release frees what a fault held.
func (n *nemesis) release(held claims, lossy bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range held.nodes {
		delete(n.held, id)
	}
	for _, at := range held.parts {
		delete(n.heldParts, at)
	}
	if lossy {
		n.lossy = false
	}
	n.cond.Broadcast()
}

// claim makes the fault being started hold node id, unless another
// fault in force does.
func (n *nemesis) claim(id int32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if kind, ok := n.held[id]; ok {
		return fmt.Errorf("%w: node %d is in a %s fault", errHeld, id, kind)
	}
	n.held[id] = n.starting
	n.claiming.nodes = append(n.claiming.nodes, id)
	return nil
}

// claimPart makes the fault being started hold a partition of the main
// topic: the drawn one, or where another fault holds it, the next free
// one.
func (n *nemesis) claimPart(drawn int32) (tp, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range n.main.Partitions {
		at := tp{n.main.Name, (drawn + k) % n.main.Partitions}
		if !n.heldParts[at] {
			n.heldParts[at] = true
			n.claiming.parts = append(n.claiming.parts, at)
			return at, nil
		}
	}
	return tp{}, fmt.Errorf("%w: every partition of %s is being moved", errHeld, n.main.Name)
}

// errHeld: the node a fault would act on is in another fault.
var errHeld = errors.New("node held by another fault")

// isHeld reports whether a fault in force acts on node id.
func (n *nemesis) isHeld(id int32) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.held[id]
	return ok
}
