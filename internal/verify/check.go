package verify

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The checker reads a history once, in order, building what each value,
// offset and consumer saw, then judges it. Everything it reports is
// derived from the history alone, so a saved history re-checks the same.

type tp struct {
	topic string
	p     int32
}

type tpo struct {
	tp
	o int64
}

const (
	sendPending = iota
	sendOK
	sendFail
	sendInfo
)

type send struct {
	proc    string
	seq     int64
	at      tp
	invoke  float64
	status  int
	offset  int64
	ackT    float64
	doneT   float64
	readers int
}

// obsValue is what one offset was seen holding first, and any other
// values seen there since.
type obsValue struct {
	v      string
	others []string
}

// consumerRead is one offset a consumer read, or a reset (rebalance).
type consumerRead struct {
	o     int64
	t     float64
	reset bool
}

type checker struct {
	meta     Meta
	topics   map[string]*TopicResult
	sends    map[string]*send
	order    []string // values in invoke order
	atOffset map[tpo]*obsValue
	offsets  map[string][]int64 // value -> distinct offsets seen
	maxRead  map[tp]int64
	known    map[tp][]int64 // offsets read, by partition (sorted at the end)
	reads    map[string]map[tp][]consumerRead
	polls    int
	commits  int
	lastT    float64
	ops      int

	// commits: per group and partition, the highest offset whose commit
	// completed, and what that was when each pending commit began.
	committed map[string]map[tp]int64
	pending   map[string]map[tp]int64 // proc -> snapshot at invoke
	// floors: per member, the partitions assigned to it and not read by
	// it since, with the group's committed offset when it was assigned.
	floors map[string]map[tp]int64

	// leaders: per partition and leader epoch, the first leader a node
	// named for it; split: the epochs already reported.
	leaders map[tpEpoch]leaderWord
	split   map[tpEpoch]bool

	// deleted: per partition, the highest offset below which a
	// DeleteRecords completed (ok); deleting: what that was when each
	// process's pending log-start began; resurrected: the partitions
	// whose final read was found below it.
	deleted     map[tp]int64
	deleting    map[string]map[tp]int64
	resurrected map[tp]bool
	deletes     int

	faults    []FaultWindow
	open      map[string]int // proc+fault -> index in faults
	errors    []string
	resources []NodeResources
}

// Check judges a history.
func Check(ops []Op) *Result {
	c := &checker{
		topics:    map[string]*TopicResult{},
		sends:     map[string]*send{},
		atOffset:  map[tpo]*obsValue{},
		offsets:   map[string][]int64{},
		maxRead:   map[tp]int64{},
		known:     map[tp][]int64{},
		reads:     map[string]map[tp][]consumerRead{},
		committed: map[string]map[tp]int64{},
		pending:   map[string]map[tp]int64{},
		floors:    map[string]map[tp]int64{},
		open:      map[string]int{},
		leaders:   map[tpEpoch]leaderWord{},
		split:     map[tpEpoch]bool{},

		deleted:     map[tp]int64{},
		deleting:    map[string]map[tp]int64{},
		resurrected: map[tp]bool{},
	}
	for i := range ops {
		c.op(&ops[i])
	}
	c.ops = len(ops)
	return c.judge()
}

func (c *checker) topic(name string) *TopicResult {
	t := c.topics[name]
	if t == nil {
		// A topic the meta line did not name: judged, for safety.
		t = &TopicResult{TopicInfo: TopicInfo{Name: name, Safety: true}, Counts: map[string]int{}}
		c.topics[name] = t
	}
	return t
}

func (c *checker) anomaly(a Anomaly) {
	t := c.topic(a.Topic)
	t.Counts[a.Kind]++
	n := 0
	for _, x := range t.Anomalies {
		if x.Kind == a.Kind {
			n++
		}
	}
	if n < maxListed {
		t.Anomalies = append(t.Anomalies, a)
	}
}

func (c *checker) op(op *Op) {
	c.lastT = max(c.lastT, op.T)
	switch op.F {
	case FMeta:
		if op.Meta != nil {
			c.meta = *op.Meta
			for _, ti := range op.Meta.Topics {
				c.topics[ti.Name] = &TopicResult{TopicInfo: ti, Counts: map[string]int{}}
			}
		}
	case FSend:
		c.sendOp(op)
	case FPoll:
		if op.Type == TOK {
			c.poll(op)
		}
	case FRebalance:
		for at, rs := range c.reads[op.Proc] {
			c.reads[op.Proc][at] = append(rs, consumerRead{reset: true, t: op.T})
		}
		c.assigned(op)
	case FCommit:
		c.commit(op)
	case FFault:
		c.fault(op)
	case FLeader:
		c.leader(op)
	case FDelete:
		c.deleteOp(op)
	case FLogStart:
		c.logStart(op)
	case FResources:
		c.resources = append(c.resources, NodeResources{Node: op.Node, PeakRSS: op.RSS, PeakFDs: op.FDs})
	}
}

type tpEpoch struct {
	tp
	epoch int32
}

// leaderWord is which node named which leader, when.
type leaderWord struct {
	leader, node int32
	t            float64
}

// leader checks one node's word on a leader epoch against the first.
func (c *checker) leader(op *Op) {
	k := tpEpoch{tp{op.Topic, op.Partition}, op.Epoch}
	first, ok := c.leaders[k]
	if !ok {
		c.leaders[k] = leaderWord{op.Leader, op.Node, op.T}
		return
	}
	if first.leader == op.Leader || c.split[k] {
		return
	}
	c.split[k] = true
	c.anomaly(Anomaly{Kind: KSplitLeader, Topic: op.Topic, Partition: op.Partition, T: op.T, Proc: op.Proc,
		Detail: fmt.Sprintf("leader epoch %d: node %d names leader %d; node %d named leader %d at %.2fs",
			op.Epoch, op.Node, op.Leader, first.node, first.leader, first.t)})
}

func (c *checker) sendOp(op *Op) {
	switch op.Type {
	case TInvoke:
		if _, dup := c.sends[op.Value]; dup {
			return
		}
		proc, seq, _ := ParseValue(op.Value)
		c.sends[op.Value] = &send{proc: proc, seq: seq, at: tp{op.Topic, op.Partition}, invoke: op.T}
		c.order = append(c.order, op.Value)
		c.topic(op.Topic).Invoked++
	case TOK, TFail, TInfo:
		s := c.sends[op.Value]
		if s == nil || s.status != sendPending {
			return
		}
		s.doneT = op.T
		switch op.Type {
		case TOK:
			s.status, s.offset, s.ackT = sendOK, op.Offset, op.T
			s.at.p = op.Partition
			c.topic(s.at.topic).Acked++
			c.observe(s.at, op.Offset, op.Value, op.T, op.Proc, "acknowledged")
		case TFail:
			s.status = sendFail
			c.topic(s.at.topic).Failed++
		default:
			s.status = sendInfo
			c.topic(s.at.topic).Indeterminate++
		}
	}
}

// observe notes that offset o of at held v, by a read or an ack.
func (c *checker) observe(at tp, o int64, v string, t float64, proc, how string) {
	key := tpo{at, o}
	if ov := c.atOffset[key]; ov == nil {
		c.atOffset[key] = &obsValue{v: v}
	} else if ov.v != v && !slices.Contains(ov.others, v) {
		ov.others = append(ov.others, v)
		c.anomaly(Anomaly{Kind: KInconsistent, Topic: at.topic, Partition: at.p, Offset: o, Value: v, T: t, Proc: proc,
			Detail: fmt.Sprintf("offset %d %s %q, but %q was seen there before", o, how, v, ov.v)})
	}
	offs := c.offsets[v]
	if !slices.Contains(offs, o) {
		c.offsets[v] = append(offs, o)
		if len(offs) == 1 { // report a value once, when its second offset shows
			c.anomaly(Anomaly{Kind: KDuplicate, Topic: at.topic, Partition: at.p, Offset: o, Value: v, T: t, Proc: proc,
				Detail: fmt.Sprintf("%q %s at offset %d, and seen at offset %d before", v, how, o, offs[0])})
		}
	}
}

func (c *checker) poll(op *Op) {
	c.polls++
	byTP := c.reads[op.Proc]
	if byTP == nil {
		byTP = map[tp][]consumerRead{}
		c.reads[op.Proc] = byTP
	}
	for _, r := range op.Records {
		at := tp{op.Topic, r.P}
		s := c.sends[r.V]
		if s == nil {
			c.anomaly(Anomaly{Kind: KUnexpected, Topic: op.Topic, Partition: r.P, Offset: r.O, Value: r.V, T: op.T, Proc: op.Proc,
				Detail: fmt.Sprintf("offset %d holds %q, which no producer sent", r.O, r.V)})
		} else {
			if s.readers == 0 {
				c.topic(s.at.topic).Read++
			}
			s.readers++
		}
		c.observe(at, r.O, r.V, op.T, op.Proc, "read")
		if op.Proc == "final" {
			c.finalRead(op, at, r)
		}
		if m, ok := c.maxRead[at]; !ok || r.O > m {
			c.maxRead[at] = r.O
		}
		c.known[at] = append(c.known[at], r.O)
		byTP[at] = append(byTP[at], consumerRead{o: r.O, t: op.T})
		c.firstRead(op, at, r.O)
	}
}

func (c *checker) fault(op *Op) {
	if op.Err != "" {
		what := op.Fault
		if what == "" {
			what = op.Proc
		}
		c.errors = append(c.errors, fmt.Sprintf("%.1fs %s: %s", op.T, what, op.Err))
	}
	// With --overlap two faults of a kind may be in force at once, never
	// on one node.
	key := fmt.Sprintf("%s/%s/%d", op.Proc, op.Fault, op.Node)
	switch op.Type {
	case TStart:
		c.open[key] = len(c.faults)
		c.faults = append(c.faults, FaultWindow{Fault: op.Fault, Node: op.Node, Detail: op.Detail, Start: op.T, End: -1})
	case TEnd:
		if i, ok := c.open[key]; ok {
			c.faults[i].End = op.T
			if op.Detail != "" {
				c.faults[i].Detail += "; " + op.Detail
			}
			delete(c.open, key)
		}
	}
}

// judge runs the checks that need the whole history.
func (c *checker) judge() *Result {
	c.lostAndUnseen()
	c.sendOrder()
	c.pollOrder()
	res := &Result{Meta: c.meta, Ops: c.ops, Duration: c.lastT, Polls: c.polls, Commits: c.commits, Deletes: c.deletes, Errors: c.errors,
		Resources: c.resources}
	for _, name := range c.topicOrder() {
		t := c.topics[name]
		for _, k := range append(slices.Clone(SafetyKinds), KUnseen) {
			t.Counts[k] += 0
		}
		sort.SliceStable(t.Anomalies, func(i, j int) bool { return t.Anomalies[i].T < t.Anomalies[j].T })
		if t.Safety {
			for _, k := range SafetyKinds {
				res.Violations += t.Counts[k]
			}
		}
		res.Topics = append(res.Topics, *t)
	}
	c.availability(res)
	return res
}

func (c *checker) topicOrder() []string {
	var names []string
	for _, ti := range c.meta.Topics {
		if _, ok := c.topics[ti.Name]; ok {
			names = append(names, ti.Name)
		}
	}
	var rest []string
	for name := range c.topics {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

func (c *checker) lostAndUnseen() {
	for _, v := range c.order {
		s := c.sends[v]
		if s.status == sendOK && s.readers > 0 {
			c.topic(s.at.topic).AckedRead++
		}
		if s.status != sendOK || s.readers > 0 {
			continue
		}
		m, read := c.maxRead[s.at]
		if read && m > s.offset {
			c.anomaly(Anomaly{Kind: KLost, Topic: s.at.topic, Partition: s.at.p, Offset: s.offset, Value: v, T: s.ackT, Proc: s.proc,
				Detail: fmt.Sprintf("%q acknowledged at offset %d, never read; offsets up to %d were", v, s.offset, m)})
		} else {
			c.anomaly(Anomaly{Kind: KUnseen, Topic: s.at.topic, Partition: s.at.p, Offset: s.offset, Value: v, T: s.ackT, Proc: s.proc,
				Detail: fmt.Sprintf("%q acknowledged at offset %d, never read, nothing after it read", v, s.offset)})
		}
	}
}

// sendOrder: a producer's acknowledged sends to one partition, taken in
// the order it sent them, must land at rising offsets.
func (c *checker) sendOrder() {
	type key struct {
		proc string
		at   tp
	}
	last := map[key]*send{}
	lastV := map[key]string{}
	for _, v := range c.order {
		s := c.sends[v]
		if s.status != sendOK || s.proc == "" {
			continue
		}
		k := key{s.proc, s.at}
		if prev := last[k]; prev != nil && s.offset <= prev.offset {
			c.anomaly(Anomaly{Kind: KNonmonotonicSend, Topic: s.at.topic, Partition: s.at.p, Offset: s.offset, Value: v, T: s.ackT, Proc: s.proc,
				Detail: fmt.Sprintf("%q acknowledged at offset %d, not after %q sent before it at offset %d", v, s.offset, lastV[k], prev.offset)})
		}
		last[k], lastV[k] = s, v
	}
}

// pollOrder: each consumer's reads of a partition rise between
// rebalances; an assigned consumer's (and the final read's) never jump
// over an offset that someone read.
func (c *checker) pollOrder() {
	for at, offs := range c.known {
		slices.Sort(offs)
		c.known[at] = slices.Compact(offs)
	}
	for _, proc := range sortedKeys(c.reads) {
		assigned := strings.HasPrefix(proc, "a") || proc == "final"
		for _, at := range sortedTPs(c.reads[proc]) {
			prev, have := int64(0), false
			for _, r := range c.reads[proc][at] {
				if r.reset {
					have = false
					continue
				}
				if have {
					if r.o <= prev {
						c.anomaly(Anomaly{Kind: KNonmonotonicPoll, Topic: at.topic, Partition: at.p, Offset: r.o, T: r.t, Proc: proc,
							Detail: fmt.Sprintf("%s read offset %d after offset %d", proc, r.o, prev)})
					} else if assigned {
						known := c.known[at]
						i, _ := slices.BinarySearch(known, prev+1)
						if i < len(known) && known[i] < r.o {
							c.anomaly(Anomaly{Kind: KPollSkip, Topic: at.topic, Partition: at.p, Offset: r.o, T: r.t, Proc: proc,
								Detail: fmt.Sprintf("%s read offset %d right after %d, skipping %d (read by others)", proc, r.o, prev, known[i])})
						}
					}
				}
				prev, have = r.o, true
			}
		}
	}
}

func sortedKeys[K int32 | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedTPs[V any](m map[tp]V) []tp {
	out := make([]tp, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b tp) int {
		if a.topic != b.topic {
			return strings.Compare(a.topic, b.topic)
		}
		return int(a.p - b.p)
	})
	return out
}
