package group

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Listing is one group in ListGroups.
type Listing struct {
	Group        string
	ProtocolType string
	State        State
	StateName    string // State's name, or a consumer group's state
	Type         string // "classic" or "consumer" (ListGroups v5)
}

// ListGroups lists the groups of the loaded partitions, sorted by name.
// states, if non-empty, keeps only groups in those states (names are
// matched case-insensitively, as Kafka does).
func (c *Coordinator) ListGroups(states []string) []Listing {
	var out []Listing
	for _, g := range c.snapshotGroups() {
		g.mu.Lock()
		l := Listing{Group: g.id, ProtocolType: g.protocolType, State: g.state, StateName: g.state.String(), Type: "classic"}
		if g.consumer != nil && g.state != Dead {
			l.ProtocolType, l.StateName, l.Type = "consumer", g.consumer.state(), "consumer"
		}
		g.mu.Unlock()
		if l.State == Dead {
			continue
		}
		if len(states) > 0 && !slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, l.StateName) }) {
			continue
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Loading reports whether any owned partition is still loading (ListGroups
// then answers COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) Loading() bool {
	for _, loaded := range c.Owned() {
		if !loaded {
			return true
		}
	}
	return false
}

// Description is a group in DescribeGroups.
type Description struct {
	Group        string
	State        State
	StateName    string // State's name, or a consumer group's state
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member in DescribeGroups. Metadata and
// assignment are given only for a Stable group, as Kafka does.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// DescribeGroup describes one group; a group that does not exist is
// described as Dead with the error GROUP_ID_NOT_FOUND (which the broker
// reports only from DescribeGroups v6).
func (c *Coordinator) DescribeGroup(id string) (Description, error) {
	d := Description{Group: id, State: Dead, StateName: Dead.String()}
	g, err := c.lockOffsetsGroup(id, false)
	if err != nil {
		return d, err
	}
	if g == nil {
		return d, kerr.GroupIDNotFound
	}
	defer g.mu.Unlock()
	d.State, d.StateName, d.ProtocolType = g.state, g.state.String(), g.protocolType
	if g.consumer != nil {
		c.describeConsumerAsClassic(g, &d)
		return d, nil
	}
	if g.state == Stable {
		d.Protocol = g.protocol
	}
	for _, mid := range g.order {
		m := g.members[mid]
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if g.state == Stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// DeleteGroups deletes empty groups and their offsets (tombstones for
// every key). One error per group: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
// or the coordinator errors. ctx is the request's, for its wait clock.
func (c *Coordinator) DeleteGroups(ctx context.Context, ids []string) []error {
	errs := make([]error, len(ids))
	for i, id := range ids {
		errs[i] = c.deleteGroup(ctx, id)
	}
	return errs
}

func (c *Coordinator) deleteGroup(ctx context.Context, id string) error {
	// The deletion records are computed from a settled consumer group.
	g, err := c.lockGroupIdle(ctx, id, false, true, true)
	if err != nil {
		return err
	}
	if g == nil {
		return kerr.GroupIDNotFound
	}
	if g.state != Empty {
		g.mu.Unlock()
		return kerr.NonEmptyGroup
	}
	recs := []Record{groupTombstone(g.id)}
	if g.consumer != nil {
		recs = recs[:0]
		for _, r := range g.consumer.deletionRecords(g.id) {
			recs = append(recs, r.encode())
		}
	}
	for t := range g.offsetKeys() {
		recs = append(recs, offsetTombstone(g.id, t))
	}
	// A barrier: until the tombstones commit the group stays as it was
	// for readers, and every change to it waits (a commit appended after
	// the tombstones belongs to the group's next life).
	var result error
	deleted := false
	w, err := c.write(g, recs, barrierWrite, func(err error) {
		result = err
		if err == nil && g.state != Dead {
			c.shutdownGroup(g, kerr.GroupIDNotFound)
			deleted = true
		}
	})
	if err != nil {
		g.mu.Unlock()
		return storeError(err)
	}
	c.wait(ctx, g, w)
	g.mu.Unlock()
	if result != nil {
		return storeError(result)
	}
	if deleted {
		c.forget(g)
	}
	return nil
}

// offsetKeys are the partitions with a committed offset or a commit in
// flight: the ones a deletion writes tombstones for.
func (g *group) offsetKeys() map[tp]bool {
	out := make(map[tp]bool, len(g.offsets)+len(g.pendingOffsets))
	for t := range g.offsets {
		out[t] = true
	}
	for t := range g.pendingOffsets {
		out[t] = true
	}
	return out
}
