package verify

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/weir-project/weir/internal/localcluster"
)

// partitionFault cuts the network (black hole) around the drawn node:
// from every other node and from the clients; or only the clients from
// it; or only one other node from it (a partial partition: each of the
// two still reaches the third, and the controller may be either side).
type partitionFault struct {
	n     *nemesis
	d     draws
	links [][2]int32 // the links it cut, undone at the heal
}

func (f *partitionFault) start(ctx context.Context) (int32, string, error) {
	id, what, err := f.n.target(ctx, f.d)
	if err != nil {
		return 0, "", err
	}
	switch f.d.pick % 3 {
	case 1:
		f.cut(localcluster.Clients, id)
		return id, "clients cut from the " + what, nil
	case 2:
		var others []int32
		for _, o := range f.n.e.ids {
			if o != id {
				others = append(others, o)
			}
		}
		other := others[(f.d.pick/3)%len(others)]
		f.cut(id, other)
		return id, fmt.Sprintf("the %s cut from node %d only", what, other), nil
	}
	for _, o := range f.n.e.ids {
		if o != id {
			f.cut(id, o)
		}
	}
	f.cut(id, localcluster.Clients)
	return id, "isolated the " + what + " from every node and the clients", nil
}

func (f *partitionFault) cut(a, b int32) {
	f.n.e.nw.Cut(a, b, localcluster.BlackHole)
	f.links = append(f.links, [2]int32{a, b})
}

// heal undoes this fault's cuts only: another partition in force
// (--overlap) stays.
func (f *partitionFault) heal(context.Context) (string, error) {
	for _, l := range f.links {
		f.n.e.nw.Uncut(l[0], l[1])
	}
	return "network healed", nil
}

// oneWayFault loses what flows one way only, as a route that drops
// packets in one direction does to everything above TCP: either what the
// drawn node sends to every other node and the clients (it hears them
// and serves their requests, but no answer, fetch or heartbeat of its own
// arrives), or what they send to it (its own requests, heartbeats among
// them, are served, but it hears no answer and no request). Either way
// work is done that its asker never learns of.
type oneWayFault struct {
	n    *nemesis
	d    draws
	dirs [][2]int32 // {from, to} of each one-way cut, undone at the heal
}

func (f *oneWayFault) start(ctx context.Context) (int32, string, error) {
	id, what, err := f.n.target(ctx, f.d)
	if err != nil {
		return 0, "", err
	}
	deaf := f.d.pick%2 == 1
	for _, o := range append(slices.Clone(f.n.e.ids), localcluster.Clients) {
		if o == id {
			continue
		}
		from, to := id, o
		if deaf {
			from, to = o, id
		}
		f.n.e.nw.CutOneWay(from, to)
		f.dirs = append(f.dirs, [2]int32{from, to})
	}
	if deaf {
		return id, "what every node and the clients send to the " + what + " lost (its own requests still served)", nil
	}
	return id, "what the " + what + " sends lost (it still hears and serves every node and the clients)", nil
}

func (f *oneWayFault) heal(context.Context) (string, error) {
	for _, d := range f.dirs {
		f.n.e.nw.UncutOneWay(d[0], d[1])
	}
	return "network healed", nil
}

// slowFault slows the drawn node's links without cutting them: every
// chunk it sends or is sent is passed on a drawn delay late (200 ms, 1 s
// or 2.5 s), on its links to every other node and the clients, or to one
// other node only. Nothing is lost and everything is late: a follower
// still fetches but may fall behind replica.lag.time.max.ms and leave
// the ISR while it does; heartbeats and Raft messages arrive late;
// clients time out requests the node still serves, so producers retry
// sends that may be written already (idempotence must keep one copy) and
// a commit may land after its client gave up on it.
type slowFault struct {
	n     *nemesis
	d     draws
	links [][2]int32
}

// slowDelays are the delays a slow fault draws from: below, near and
// past the clients' and the brokers' own timeouts' fractions.
var slowDelays = []time.Duration{200 * time.Millisecond, time.Second, 2500 * time.Millisecond}

func (f *slowFault) start(ctx context.Context) (int32, string, error) {
	id, what, err := f.n.target(ctx, f.d)
	if err != nil {
		return 0, "", err
	}
	d := slowDelays[(f.d.pick>>4)%len(slowDelays)]
	var others []int32
	for _, o := range f.n.e.ids {
		if o != id {
			others = append(others, o)
		}
	}
	if f.d.pick%2 == 1 {
		other := others[(f.d.pick/2)%len(others)]
		f.slow(id, other, d)
		return id, fmt.Sprintf("the link of the %s to node %d slowed by %v", what, other, d), nil
	}
	for _, o := range append(others, localcluster.Clients) {
		f.slow(id, o, d)
	}
	return id, fmt.Sprintf("every link of the %s (to every node and the clients) slowed by %v", what, d), nil
}

func (f *slowFault) slow(a, b int32, d time.Duration) {
	f.n.e.nw.Delay(a, b, d)
	f.links = append(f.links, [2]int32{a, b})
}

// heal undoes this fault's delays only.
func (f *slowFault) heal(context.Context) (string, error) {
	for _, l := range f.links {
		f.n.e.nw.Undelay(l[0], l[1])
	}
	return "links at full speed", nil
}
