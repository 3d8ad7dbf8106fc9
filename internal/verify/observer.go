package verify

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The observer asks nodes one by one what the metadata says, on
// connections no fault cuts (past the proxies), so the nemesis can find
// leaders, followers and the active controller while the network is
// partitioned, and tell when the cluster is healthy again.

type partState struct {
	Leader   int32
	Epoch    int32
	Replicas []int32 // sorted
	ISR      []int32 // sorted
	Order    []int32 // the replicas in the controller's order, the preferred leader first
}

// view is one node's metadata.
type view struct {
	node       int32
	controller int32
	parts      map[tp]partState
}

type observer struct {
	addrs  map[int32]string // node id -> client address as advertised
	dialer func(ctx context.Context, network, host string) (net.Conn, error)

	mu      sync.Mutex
	clients map[int32]*kgo.Client
	// record, once set (recordLeaders), gets each (node, partition, leader
	// epoch, leader) the first time a view shows it: the checker's
	// evidence that every epoch had one leader everywhere.
	record func(Op)
	named  map[leaderNamed]bool
}

// leaderNamed is one node's word on who leads one epoch of a partition.
type leaderNamed struct {
	node          int32
	at            tp
	epoch, leader int32
}

// recordLeaders makes every view from now on record the leaders it names
// (FLeader), each the first time.
func (o *observer) recordLeaders(record func(Op)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record, o.named = record, map[leaderNamed]bool{}
}

// noteLeaders records what v names for the first time.
func (o *observer) noteLeaders(v view) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.record == nil {
		return
	}
	for at, st := range v.parts {
		k := leaderNamed{v.node, at, st.Epoch, st.Leader}
		if st.Leader < 0 || o.named[k] {
			continue
		}
		o.named[k] = true
		o.record(Op{Proc: "observer", Type: TInfo, F: FLeader, Topic: at.topic, Partition: at.p,
			Node: v.node, Leader: st.Leader, Epoch: st.Epoch})
	}
}

func newObserver(addrs map[int32]string, direct func(string) string) *observer {
	var d net.Dialer
	return &observer{
		addrs:   addrs,
		clients: map[int32]*kgo.Client{},
		dialer: func(ctx context.Context, network, host string) (net.Conn, error) {
			return d.DialContext(ctx, network, direct(host))
		},
	}
}

func (o *observer) client(id int32) (*kgo.Client, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cl := o.clients[id]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.addrs[id]), kgo.Dialer(o.dialer),
		kgo.RequestRetries(0), kgo.DialTimeout(2*time.Second), kgo.ClientID("weir-verify-observer"))
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	o.clients[id] = cl
	return cl, nil
}

func (o *observer) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, cl := range o.clients {
		cl.Close()
	}
}

// viewOf asks node id for the metadata of topics (nil: all topics).
func (o *observer) viewOf(ctx context.Context, id int32, topics []string) (view, error) {
	cl, err := o.client(id)
	if err != nil {
		return view{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return view{}, fmt.Errorf("metadata from node %d: %w", id, err)
	}
	v := view{node: id, controller: resp.ControllerID, parts: map[tp]partState{}}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil || t.Topic == nil {
			continue
		}
		for _, p := range t.Partitions {
			v.parts[tp{*t.Topic, p.Partition}] = partState{Leader: p.Leader, Epoch: p.LeaderEpoch,
				Replicas: slices.Sorted(slices.Values(p.Replicas)), ISR: slices.Sorted(slices.Values(p.ISR)),
				Order: p.Replicas}
		}
	}
	o.noteLeaders(v)
	return v, nil
}

// views asks every node in ids, skipping those that do not answer.
func (o *observer) views(ctx context.Context, ids []int32, topics []string) []view {
	var out []view
	for _, id := range ids {
		if v, err := o.viewOf(ctx, id, topics); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// partition is the newest state of one partition among the views (the
// highest leader epoch).
func partition(vs []view, at tp) (partState, bool) {
	var best partState
	found := false
	for _, v := range vs {
		if st, ok := v.parts[at]; ok && (!found || st.Epoch > best.Epoch) {
			best, found = st, true
		}
	}
	return best, found
}

// controller is the active controller most views name.
func controller(vs []view) int32 {
	votes := map[int32]int{}
	best, n := int32(-1), 0
	for _, v := range vs {
		if v.controller < 0 {
			continue
		}
		votes[v.controller]++
		if votes[v.controller] > n {
			best, n = v.controller, votes[v.controller]
		}
	}
	return best
}

// healthy reports whether every view shows every partition of topics
// with a leader (the same one) and all its replicas in sync; why not, if
// not.
func healthy(vs []view, want int, topics map[string]int32) (bool, string) {
	if len(vs) < want {
		return false, fmt.Sprintf("%d of %d nodes answer", len(vs), want)
	}
	for _, v := range vs {
		for topic, n := range topics {
			for p := range n {
				at := tp{topic, p}
				st, ok := v.parts[at]
				switch {
				case !ok:
					return false, fmt.Sprintf("node %d does not know %s-%d", v.node, topic, p)
				case st.Leader < 0:
					return false, fmt.Sprintf("%s-%d has no leader (node %d)", topic, p, v.node)
				case !slices.Equal(st.ISR, st.Replicas):
					return false, fmt.Sprintf("%s-%d ISR %v of replicas %v (node %d)", topic, p, st.ISR, st.Replicas, v.node)
				}
				if first, _ := vs[0].parts[at]; first.Leader != st.Leader {
					return false, fmt.Sprintf("%s-%d: nodes disagree on the leader", topic, p)
				}
			}
		}
	}
	return true, ""
}
