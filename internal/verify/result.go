package verify

// Anomaly kinds, Jepsen's names for what its Kafka workload finds.
const (
	// KLost: a send was acknowledged, its value was never read, yet
	// later offsets of its partition were.
	KLost = "lost"
	// KDuplicate: one value at two or more offsets.
	KDuplicate = "duplicate"
	// KInconsistent: one partition offset seen with two or more values
	// (by reads, or by a read and the send's acknowledgement).
	KInconsistent = "inconsistent-offsets"
	// KUnexpected: a value read that no producer ever sent.
	KUnexpected = "unexpected"
	// KNonmonotonicSend: one producer's acknowledged sends to a partition
	// whose offsets do not rise with the order it sent them in.
	KNonmonotonicSend = "nonmonotonic-send"
	// KNonmonotonicPoll: a consumer read an offset not after the one it
	// read before on that partition, with no rebalance between.
	KNonmonotonicPoll = "nonmonotonic-poll"
	// KPollSkip: an assigned consumer's consecutive reads of a partition
	// jumped over offsets that exist (others read them).
	KPollSkip = "poll-skip"
	// KCommitBackwards: a group's committed offset for a partition went
	// below one whose commit had completed before this one began.
	KCommitBackwards = "nonmonotonic-commit"
	// KStaleCommitRead: a group member's first read of a partition it was
	// assigned is below an offset whose commit had completed before the
	// assignment: its coordinator answered OffsetFetch from a stale state.
	// Not one of Jepsen's.
	KStaleCommitRead = "stale-commit-read"
	// KSplitLeader: two nodes' metadata named different leaders for one
	// leader epoch of a partition. Not one of Jepsen's: its Kafka workload
	// sees only what clients see. Every leader epoch has one leader, chosen
	// once in the metadata log; two mean the nodes' metadata diverged (a
	// split brain), whatever the clients happened to notice.
	KSplitLeader = "split-leader"
	// KResurrected: records deleted by a DeleteRecords that had
	// completed are readable again: a ListOffsets begun after it answered
	// a lower log start, or the final read returned an offset below it.
	// Not one of Jepsen's: its Kafka workload deletes nothing.
	KResurrected = "resurrected"
	// KUnseen is not a violation: acknowledged, never read, and nothing
	// after it read either (the final read did not reach it).
	KUnseen = "unseen"
)

// SafetyKinds are the anomalies that fail a run, in report order.
var SafetyKinds = []string{KLost, KDuplicate, KInconsistent, KUnexpected,
	KNonmonotonicSend, KNonmonotonicPoll, KPollSkip, KCommitBackwards, KStaleCommitRead, KSplitLeader, KResurrected}

// maxListed bounds the anomalies kept per kind and topic (all are counted).
const maxListed = 200

// TopicInfo describes a topic of the workload (the history's first line).
type TopicInfo struct {
	Name       string `json:"name"`
	Partitions int32  `json:"partitions"`
	Acks       string `json:"acks"` // "all" or "1"
	// Safety: anomalies on this topic fail the run. The extra acks=1
	// topic of a safe run is there to be looked at, not to pass.
	Safety bool `json:"safety"`
}

// Anomaly is one finding, with the time it showed (seconds since start).
type Anomaly struct {
	Kind      string  `json:"kind"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"p"`
	Offset    int64   `json:"o"`
	Value     string  `json:"value,omitempty"`
	T         float64 `json:"t"`
	Proc      string  `json:"proc,omitempty"`
	Detail    string  `json:"detail"`
}

// TopicResult is what the checker found on one topic.
type TopicResult struct {
	TopicInfo
	Invoked       int `json:"invoked"`
	Acked         int `json:"acked"`
	Failed        int `json:"failed"`
	Indeterminate int `json:"indeterminate"`
	// Read is the number of distinct values read; AckedRead of those acknowledged.
	Read      int `json:"read"`
	AckedRead int `json:"ackedRead"`
	// Counts has every kind, zero included; Anomalies at most maxListed of each.
	Counts    map[string]int `json:"counts"`
	Anomalies []Anomaly      `json:"anomalies"`
}

// FaultWindow is one fault from its start to its heal, with what the
// acks=all topic did meanwhile and after.
type FaultWindow struct {
	Fault  string  `json:"fault"`
	Node   int32   `json:"node,omitempty"`
	Detail string  `json:"detail"`
	Start  float64 `json:"start"`
	End    float64 `json:"end"` // the heal; -1 if it never healed
	Acked  int     `json:"acked"`
	Rate   float64 `json:"rate"` // acknowledged sends per second during the window
	// Recovery is the time from the heal until every partition had
	// acknowledged a send invoked after it; -1 if some never did,
	// RecoveryUnseen if the producers stopped too soon after the heal
	// (or before it) to tell.
	Recovery float64 `json:"recovery"`
}

// RecoveryUnseen is the Recovery of a fault that healed too near the end
// of the run (under --overlap) for its recovery to be seen.
const RecoveryUnseen = -2

// Availability sums the windows of one kind of fault.
type Availability struct {
	Fault       string  `json:"fault"`
	Count       int     `json:"count"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"rate"`        // acknowledged sends per second inside these windows
	MeanRecover float64 `json:"meanRecover"` // over the windows that recovered
	MaxRecover  float64 `json:"maxRecover"`  // -1 if one never recovered; windows of RecoveryUnseen left out
}

// Bucket is one slice of the timeline.
type Bucket struct {
	T      float64 `json:"t"` // start, seconds
	Acked  int     `json:"acked"`
	Failed int     `json:"failed"` // failed or indeterminate sends completing in it
	P50    float64 `json:"p50"`    // acknowledgement latency, ms
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// Result is the checker's verdict on a history.
type Result struct {
	Meta       Meta           `json:"meta"`
	Ops        int            `json:"ops"`
	Duration   float64        `json:"duration"`
	Topics     []TopicResult  `json:"topics"`
	Polls      int            `json:"polls"`
	Commits    int            `json:"commits"`
	Deletes    int            `json:"deletes"` // DeleteRecords completed
	Faults     []FaultWindow  `json:"faults"`
	Avail      []Availability `json:"availability"`
	Baseline   float64        `json:"baseline"` // acknowledged sends per second outside faults
	Bucket     float64        `json:"bucket"`   // seconds per timeline bucket
	Timeline   []Bucket       `json:"timeline"`
	Violations int            `json:"violations"` // safety anomalies on safety topics
	// Errors are what went wrong with the run itself: a fault that could
	// not be applied or healed, a cluster that did not recover, a final
	// read that did not finish.
	Errors []string `json:"errors,omitempty"`
	// Resources are the nodes' peaks (local clusters only).
	Resources []NodeResources `json:"resources,omitempty"`
}

// Meta is the run's description, the history's first line.
type Meta struct {
	Seed     int64       `json:"seed"`
	Nodes    int         `json:"nodes"`
	Unsafe   bool        `json:"unsafe"`
	Faults   []string    `json:"faults"`
	Topics   []TopicInfo `json:"topics"`
	Started  string      `json:"started"`
	Attached bool        `json:"attached,omitempty"`
	Skipped  []string    `json:"skipped,omitempty"` // faults asked for that could not be applied
	// GroupProtocol is the consumer group's protocol (empty: classic).
	GroupProtocol string `json:"groupProtocol,omitempty"`
	// MinInsync is the topics' min.insync.replicas (0 in histories
	// written before it was recorded).
	MinInsync int `json:"minInsync,omitempty"`
}

// OK reports whether the run found no safety violation.
func (r *Result) OK() bool { return r.Violations == 0 }

// FaultCounts counts the faults injected, by kind.
func (r *Result) FaultCounts() map[string]int {
	out := map[string]int{}
	for _, f := range r.Faults {
		out[f.Fault]++
	}
	return out
}
