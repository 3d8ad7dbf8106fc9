package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
)

// InmemNetwork is the in-process twin of the inter-broker network, for
// tests (as hashicorp/raft's InmemTransport is for Raft): leader replicas
// registered with Host are served to fetchers in the same process, through
// the same replica calls the broker uses (ReadForFollower, CheckLeaderEpoch,
// EndOffsetForEpoch), and every request and response is encoded and
// decoded at the negotiated version, as on the wire, so version-dependent
// fields (ReplicaID against ReplicaState, topic names against ids) are
// exercised. Brokers can be taken down, which fails dials and requests,
// in-flight long polls included.
type InmemNetwork struct {
	mu      sync.Mutex
	brokers map[int32]*inmemBroker
	// Versions answered, as the wire client negotiates them with the broker.
	fetchVersion, epochVersion int16
	// dials counts successful dials per broker, clients open ones,
	// fetches the Fetch requests received.
	dials, clients, fetches map[int32]int
	polls                   map[*inmemPoll]struct{}
}

type inmemBroker struct {
	parts map[storage.TopicPartition]*replica.Partition
	ids   map[[16]byte]string // topic id -> name
	down  bool
	// downCh is closed when the broker goes down (waking long polls) and
	// replaced by a new one when it comes back.
	downCh chan struct{}
}

// inmemPoll is a fetch waiting in its long poll.
type inmemPoll struct {
	leader int32
	parts  []storage.TopicPartition
}

// NewInmemNetwork returns a network with no brokers, answering Fetch v17
// and OffsetForLeaderEpoch v4 (what weir's broker negotiates).
func NewInmemNetwork() *InmemNetwork {
	return &InmemNetwork{
		brokers:      map[int32]*inmemBroker{},
		fetchVersion: MaxFetchVersion,
		epochVersion: 4,
		dials:        map[int32]int{},
		clients:      map[int32]int{},
		fetches:      map[int32]int{},
		polls:        map[*inmemPoll]struct{}{},
	}
}

// SetVersions sets the Fetch and OffsetForLeaderEpoch versions used from
// now on.
func (n *InmemNetwork) SetVersions(fetch, offsetForLeaderEpoch int16) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fetchVersion, n.epochVersion = fetch, offsetForLeaderEpoch
}

func (n *InmemNetwork) brokerLocked(id int32) *inmemBroker {
	b := n.brokers[id]
	if b == nil {
		b = &inmemBroker{parts: map[storage.TopicPartition]*replica.Partition{}, ids: map[[16]byte]string{}, downCh: make(chan struct{})}
		n.brokers[id] = b
	}
	return b
}

// Host makes broker id serve p (its local replica of a partition of the
// topic with topicID), replacing any replica it served for the partition.
func (n *InmemNetwork) Host(id int32, p *replica.Partition, topicID [16]byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := n.brokerLocked(id)
	tp := p.TopicPartition()
	b.parts[tp] = p
	b.ids[topicID] = tp.Topic
}

// Unhost stops broker id serving tp: requests for it then answer
// UNKNOWN_TOPIC_OR_PARTITION, as a broker without the replica does.
func (n *InmemNetwork) Unhost(id int32, tp storage.TopicPartition) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.brokerLocked(id).parts, tp)
}

// SetDown takes broker id off the network (true) or back on (false).
// While down, dials fail and requests on open clients, in-flight ones
// included, fail as if the connection broke.
func (n *InmemNetwork) SetDown(id int32, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := n.brokerLocked(id)
	switch {
	case down && !b.down:
		close(b.downCh)
	case !down && b.down:
		b.downCh = make(chan struct{})
	}
	b.down = down
}

// Dials is how many clients to broker id were dialed successfully.
func (n *InmemNetwork) Dials(id int32) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dials[id]
}

// Fetches is how many Fetch requests broker id received.
func (n *InmemNetwork) Fetches(id int32) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fetches[id]
}

// OpenClients is how many clients to broker id are open.
func (n *InmemNetwork) OpenClients(id int32) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clients[id]
}

// LongPolling reports whether one fetch waiting in its long poll on
// broker leader names every one of tps.
func (n *InmemNetwork) LongPolling(leader int32, tps ...storage.TopicPartition) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for poll := range n.polls {
		if poll.leader != leader {
			continue
		}
		all := true
		for _, tp := range tps {
			all = all && slices.Contains(poll.parts, tp)
		}
		if all {
			return true
		}
	}
	return false
}

// errInmemDown is the connection failure of a broker that is down.
var errInmemDown = errors.New("inmem: broker unreachable")

// Dial implements Dialer.
func (n *InmemNetwork) Dial(ctx context.Context, leaderID int32) (LeaderClient, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if b := n.brokers[leaderID]; b == nil || b.down {
		return nil, fmt.Errorf("dial broker %d: %w", leaderID, errInmemDown)
	}
	n.dials[leaderID]++
	n.clients[leaderID]++
	return &inmemClient{n: n, leader: leaderID}, nil
}

// inmemClient is one client to one broker of the twin network.
type inmemClient struct {
	n      *InmemNetwork
	leader int32
	mu     sync.Mutex
	closed bool
	// last holds the encoding the previous response was decoded from (its
	// byte fields alias it). The next request overwrites it, as the wire
	// client reuses its buffer, so a fetcher that kept record batches past
	// its next request reads garbage in tests too.
	last []byte
}

// answer decodes msg at v from the client's response buffer, after
// poisoning what the previous answer left there.
func answer[T interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
	SetVersion(int16)
}](c *inmemClient, msg, fresh T, v int16) (T, error) {
	for i := range c.last {
		c.last[i] = 0xa5
	}
	msg.SetVersion(v)
	fresh.SetVersion(v)
	c.last = msg.AppendTo(c.last[:0])
	if err := fresh.ReadFrom(c.last); err != nil {
		return fresh, fmt.Errorf("inmem: decode at v%d: %w", v, err)
	}
	return fresh, nil
}

func (c *inmemClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.n.mu.Lock()
		c.n.clients[c.leader]--
		c.n.mu.Unlock()
	}
	return nil
}

// broker returns the leader's broker and the channel closed if it goes
// down, or the connection error.
func (c *inmemClient) broker() (*inmemBroker, <-chan struct{}, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, nil, errors.New("inmem: client closed")
	}
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	b := c.n.brokers[c.leader]
	if b == nil || b.down {
		return nil, nil, fmt.Errorf("broker %d: %w", c.leader, errInmemDown)
	}
	return b, b.downCh, nil
}

// isDown reports whether the leader is down now.
func (c *inmemClient) isDown() bool {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	b := c.n.brokers[c.leader]
	return b == nil || b.down
}

// lookup finds the served replica by name or (v13+) topic id.
func (c *inmemClient) lookup(b *inmemBroker, byID bool, name string, id [16]byte, part int32) (*replica.Partition, *kerr.Error) {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if byID {
		var ok bool
		if name, ok = b.ids[id]; !ok {
			return nil, kerr.UnknownTopicID
		}
	}
	p := b.parts[storage.TopicPartition{Topic: name, Partition: part}]
	if p == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	return p, nil
}

// roundTrip encodes msg at version v and decodes it into fresh, as a
// connection would.
func roundTrip[T interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
	SetVersion(int16)
}](msg, fresh T, v int16) (T, error) {
	msg.SetVersion(v)
	fresh.SetVersion(v)
	if err := fresh.ReadFrom(msg.AppendTo(nil)); err != nil {
		return fresh, fmt.Errorf("inmem: decode at v%d: %w", v, err)
	}
	return fresh, nil
}

// Fetch serves a replica fetch as weir's broker does: each partition read
// through ReadForFollower, long-polling until MinBytes or MaxWait.
func (c *inmemClient) Fetch(ctx context.Context, in *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	b, down, err := c.broker()
	if err != nil {
		return nil, err
	}
	c.n.mu.Lock()
	v := c.n.fetchVersion
	c.n.fetches[c.leader]++
	c.n.mu.Unlock()
	req, err := roundTrip(in, kmsg.NewPtrFetchRequest(), v)
	if err != nil {
		return nil, err
	}
	replicaID := req.ReplicaID
	if v >= 15 {
		replicaID = req.ReplicaState.ID
	}
	w := replica.NewWaiter()
	defer w.Done()
	poll := &inmemPoll{leader: c.leader}
	c.n.mu.Lock()
	for _, rt := range req.Topics {
		name := rt.Topic
		if v >= 13 {
			name = b.ids[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			poll.parts = append(poll.parts, storage.TopicPartition{Topic: name, Partition: rp.Partition})
		}
	}
	c.n.mu.Unlock()
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	first := true
	var resp *kmsg.FetchResponse
	for {
		var total int64
		var failed bool
		resp, total, failed = c.fillFetch(b, req, replicaID, w, first)
		first = false
		remaining := time.Until(deadline)
		if total >= int64(req.MinBytes) || failed || remaining <= 0 {
			break
		}
		if !c.wait(ctx, w, poll, down, remaining) {
			break
		}
	}
	if c.isDown() {
		return nil, fmt.Errorf("broker %d: %w", c.leader, errInmemDown)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return answer(c, resp, &kmsg.FetchResponse{}, v)
}

// wait sleeps until a watched partition changes (true), or the timeout,
// ctx or the broker going down (false).
func (c *inmemClient) wait(ctx context.Context, w *replica.Waiter, poll *inmemPoll, down <-chan struct{}, timeout time.Duration) bool {
	c.n.mu.Lock()
	c.n.polls[poll] = struct{}{}
	c.n.mu.Unlock()
	defer func() {
		c.n.mu.Lock()
		delete(c.n.polls, poll)
		c.n.mu.Unlock()
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.C():
		return true
	case <-timer.C:
	case <-ctx.Done():
	case <-down:
	}
	return false
}

func (c *inmemClient) fillFetch(b *inmemBroker, req *kmsg.FetchRequest, replicaID int32, w *replica.Waiter, register bool) (*kmsg.FetchResponse, int64, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	var total int64
	failed := false
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			sp.RecordBatches = []byte{}
			p, kerrCode := c.lookup(b, req.Version >= 13, rt.Topic, rt.TopicID, rp.Partition)
			if kerrCode != nil {
				sp.ErrorCode = kerrCode.Code
				failed = true
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if register {
				w.Watch(p, replica.LogEnd|replica.HighWatermark)
			}
			// As the broker does: every partition's fetch offset is
			// recorded, and once the response holds data, a batch that
			// would overshoot its limit waits for the next fetch.
			limit := min(int64(rp.PartitionMaxBytes), int64(req.MaxBytes)-total)
			res, o, err := p.ReadForFollower(replica.FollowerFetch{
				ReplicaID:          replicaID,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
				FetchOffset:        rp.FetchOffset,
				LogStartOffset:     rp.LogStartOffset,
				MaxBytes:           int(max(limit, 1)),
				CannotWrite:        rp.PartitionMaxBytes == 0,
			})
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = o.HighWater, o.HighWater, o.LogStart
			var data []byte
			if err == nil && (total == 0 || res.Len <= limit) {
				data, err = res.Bytes()
			}
			if err != nil {
				sp.ErrorCode = inmemErrorCode(err)
				failed = true
			} else if len(data) > 0 {
				sp.RecordBatches = data
				total += int64(len(data))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, failed
}

// OffsetForLeaderEpoch answers from the leader's epoch cache.
func (c *inmemClient) OffsetForLeaderEpoch(ctx context.Context, in *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	b, _, err := c.broker()
	if err != nil {
		return nil, err
	}
	c.n.mu.Lock()
	v := c.n.epochVersion
	c.n.mu.Unlock()
	req, err := roundTrip(in, kmsg.NewPtrOffsetForLeaderEpochRequest(), v)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p, kerrCode := c.lookup(b, false, rt.Topic, [16]byte{}, rp.Partition)
			switch {
			case kerrCode != nil:
				sp.ErrorCode = kerrCode.Code
			default:
				if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
					sp.ErrorCode = inmemErrorCode(err)
				} else {
					sp.LeaderEpoch, sp.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return answer(c, resp, &kmsg.OffsetForLeaderEpochResponse{}, v)
}

// inmemErrorCode maps replica and storage errors to Kafka codes, as the
// broker does.
func inmemErrorCode(err error) int16 {
	switch {
	case errors.Is(err, replica.ErrNotLeader), errors.Is(err, replica.ErrNotReplica),
		errors.Is(err, replica.ErrRemoved), errors.Is(err, storage.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, storage.ErrStorage):
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}
