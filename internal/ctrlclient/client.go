// Package ctrlclient is a broker's link to the active controller. It finds
// the controller among the quorum's voters, sends it Kafka's controller
// requests (BrokerRegistration, BrokerHeartbeat, AlterPartition, and admin
// requests a broker forwards for its clients) on the CONTROLLER listener,
// and runs the broker's registration and heartbeat lifecycle.
//
// It speaks only the Kafka protocol, through franz-go: nothing here knows
// how the controller decides.
package ctrlclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a Client.
type Config struct {
	NodeID int32
	// Voters maps each controller's node id to its CONTROLLER listener
	// address (controller.quorum.voters).
	Voters map[int32]string
	// Leader, if set, names the quorum leader as this node's own Raft
	// instance sees it: tried first.
	Leader func() (id int32, ok bool)
	// CurrentVoters, if set, returns the quorum's voters now (id ->
	// address) as this node's Raft configuration says: after voters were
	// added or removed, it finds controllers Voters does not name. Voters
	// stays the fallback for a node that has no configuration yet.
	CurrentVoters func() map[int32]string
	// RetryBackoff is the pause after every candidate failed (default
	// 100 ms).
	RetryBackoff time.Duration
	Logger       *slog.Logger
}

// Client sends requests to the active controller.
type Client struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	clients map[string]*kgo.Client // by controller address
	last    int32                  // the controller that last answered, -1 if none
	closed  bool
}

// New returns a client; connections are made on first use.
func New(cfg Config) *Client {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	return &Client{cfg: cfg, log: cfg.Logger, clients: map[string]*kgo.Client{}, last: -1}
}

// Close closes every connection.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = map[string]*kgo.Client{}
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("controller client closed")

// voters is every controller to try, by id: the configured ones, with
// the current Raft configuration's on top.
func (c *Client) voters() map[int32]string {
	out := maps.Clone(c.cfg.Voters)
	if out == nil {
		out = map[int32]string{}
	}
	if c.cfg.CurrentVoters != nil {
		maps.Copy(out, c.cfg.CurrentVoters())
	}
	return out
}

// candidates orders the voters to try: the Raft leader as known locally,
// then the one that answered last, then the rest by id; with each one's
// address.
func (c *Client) candidates() ([]int32, map[int32]string) {
	voters := c.voters()
	ids := slices.Sorted(maps.Keys(voters))
	var first []int32
	if c.cfg.Leader != nil {
		if id, ok := c.cfg.Leader(); ok {
			first = append(first, id)
		}
	}
	c.mu.Lock()
	if c.last >= 0 {
		first = append(first, c.last)
	}
	c.mu.Unlock()
	out := make([]int32, 0, len(ids))
	for _, id := range append(first, ids...) {
		if _, ok := voters[id]; ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, voters
}

func (c *Client) client(id int32, addr string) (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if cl := c.clients[addr]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(fmt.Sprintf("weir-broker-%d", c.cfg.NodeID)),
		kgo.DialTimeout(5*time.Second),
		kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("controller %d at %s: %w", id, addr, err)
	}
	c.clients[addr] = cl
	return cl, nil
}

// Send sends req to the active controller and returns its answer. A
// NOT_CONTROLLER answer or a connection failure moves on to the next
// voter, round after round, until ctx ends. Other errors in the answer
// are the caller's.
func (c *Client) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	var lastErr error
	for {
		ids, addrs := c.candidates()
		for _, id := range ids {
			resp, err := c.sendTo(ctx, id, addrs[id], req)
			if err == nil && !NotController(resp) {
				c.mu.Lock()
				c.last = id
				c.mu.Unlock()
				return resp, nil
			}
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			if err == nil {
				err = fmt.Errorf("node %d: %w", id, kerr.NotController)
			}
			lastErr = err
			c.mu.Lock()
			if c.last == id {
				c.last = -1
			}
			c.mu.Unlock()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("send %s to the controller: %w (last: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), lastErr)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("send %s to the controller: %w (last: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), lastErr)
		case <-time.After(c.cfg.RetryBackoff):
		}
	}
}

func (c *Client) sendTo(ctx context.Context, id int32, addr string, req kmsg.Request) (kmsg.Response, error) {
	cl, err := c.client(id, addr)
	if err != nil {
		return nil, err
	}
	// One attempt per candidate, bounded, so a dead or paused voter does
	// not hold the caller past the next candidate's chance.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, fmt.Errorf("controller %d at %s: %w", id, addr, err)
	}
	return resp, nil
}

// NotController reports whether a controller's answer says it is not the
// active controller (then the request was not acted on).
func NotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == nc
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.ElectLeadersResponse:
		return r.ErrorCode == nc
	case *kmsg.ControllerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.UnregisterBrokerResponse:
		return r.ErrorCode == nc
	// The Raft APIs answer as Kafka's KRaft leader does when asked
	// elsewhere: NOT_LEADER_OR_FOLLOWER.
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode == kerr.NotLeaderForPartition.Code
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == kerr.NotLeaderForPartition.Code
	case *kmsg.DescribeQuorumResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code {
					return true
				}
			}
		}
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	}
	return false
}
