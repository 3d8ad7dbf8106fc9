package metadata

import (
	"sync"

	"github.com/hashicorp/raft"
)

// raftTransport is what a transport must offer for commitBound to stand in
// for it without Raft losing a feature: pre-vote and a clean close.
type raftTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// commitBound wraps a Raft transport and lowers the commit index of every
// AppendEntries request it receives to the last entry that request proves
// this follower shares with the leader: its last entry, or, with no
// entries, the one it checks (PrevLogEntry). That is the Raft paper's rule
// (commitIndex = min(leaderCommit, index of last new entry)).
//
// hashicorp/raft (v1.7.2) takes the follower's own last index instead. A
// follower that was a leader cut off (or stopped) with entries no one else
// got has them past the point a new leader's request checks; a request
// whose commit index reaches beyond that point then commits and applies
// them, though the quorum committed other commands at those indexes. The
// metadata images diverge for good: weir verify saw a resumed controller
// apply its own uncommitted fence of itself, elect a different leader in
// the same leader epoch than the other nodes, and later lead partitions
// the others never knew it led. With the bound the request commits only
// what it matched; the leader's next request, which carries the entries
// after it, truncates the stale ones first.
type commitBound struct {
	raftTransport
	rpcs      chan raft.RPC
	done      chan struct{}
	closeOnce sync.Once
}

func newCommitBound(t raftTransport) *commitBound {
	c := &commitBound{raftTransport: t, rpcs: make(chan raft.RPC), done: make(chan struct{})}
	go c.forward()
	return c
}

// Consumer returns the bounded requests; Raft reads it from start to close.
func (c *commitBound) Consumer() <-chan raft.RPC { return c.rpcs }

func (c *commitBound) forward() {
	in := c.raftTransport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-c.done:
			return
		}
		if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
			boundCommit(req)
		}
		select {
		case c.rpcs <- rpc:
		case <-c.done:
			return
		}
	}
}

// boundCommit applies the rule to one request.
func boundCommit(req *raft.AppendEntriesRequest) {
	matched := req.PrevLogEntry
	if n := len(req.Entries); n > 0 {
		matched = req.Entries[n-1].Index
	}
	req.LeaderCommitIndex = min(req.LeaderCommitIndex, matched)
}

// Close stops forwarding and closes the transport.
func (c *commitBound) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.raftTransport.Close()
}
