package metadata

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hashicorp/raft"
)

// AddNonvoter adds node id, whose Raft transport listens at addr, to the
// Raft cluster as a non-voter: it receives and applies the metadata log
// (so a broker-only node has an Image) but never votes or leads. The node
// is started with Config.Join. Leader only. Adding a node already in the
// cluster only updates its address (a voter stays a voter).
func (c *Controller) AddNonvoter(ctx context.Context, id int32, addr string) error {
	if err := c.checkLeader(); err != nil {
		return err
	}
	if id < 0 || addr == "" {
		return fmt.Errorf("%w: add non-voter: node id %d at %q", ErrInvalidRequest, id, addr)
	}
	sid := raft.ServerID(strconv.Itoa(int(id)))
	if err := c.await(ctx, func() raft.Future {
		return c.raft.AddNonvoter(sid, raft.ServerAddress(addr), 0, timeoutOf(ctx))
	}); err != nil {
		return fmt.Errorf("add non-voter %d at %s: %w", id, addr, err)
	}
	return nil
}
