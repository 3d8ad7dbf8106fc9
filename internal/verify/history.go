package verify

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Operation functions (Op.F), in Jepsen's Kafka-workload vocabulary.
const (
	FSend      = "send"      // one record produced
	FPoll      = "poll"      // one fetch's records, for one consumer
	FCommit    = "commit"    // a group member's offset commit
	FRebalance = "rebalance" // a group member's assignment changed
	FFault     = "fault"     // the nemesis: a fault starts or heals
	FMeta      = "meta"      // the first line: the run's description
	FResources = "resources" // one node's peak memory and descriptors
	FLeader    = "leader"    // a node's metadata named a partition's leader in a leader epoch (first time only)
	FDelete    = "delete"    // DeleteRecords of one partition below an offset
	FLogStart  = "log-start" // ListOffsets (earliest) of every partition of a topic
)

// Operation types (Op.Type). A process invokes an operation and later
// completes it with ok (it happened), fail (it certainly did not) or info
// (unknown: a timeout, a lost connection). Faults start and end.
const (
	TInvoke = "invoke"
	TOK     = "ok"
	TFail   = "fail"
	TInfo   = "info"
	TStart  = "start"
	TEnd    = "end"
)

// Op is one line of the history (JSON lines). Fields a kind of operation
// does not use are left out of its line.
type Op struct {
	T     float64 `json:"t"`    // seconds since the run started
	Proc  string  `json:"proc"` // p1.. producers, a1.. assigned consumers, g1.. group members, d the deleter, final, nemesis
	Type  string  `json:"type"`
	F     string  `json:"f"`
	Topic string  `json:"topic,omitempty"`

	// send
	Value     string `json:"value,omitempty"`
	Partition int32  `json:"p,omitempty"`
	Offset    int64  `json:"o,omitempty"`

	// poll
	Records []Rec `json:"recs,omitempty"`

	// delete: Partition, and Offset the offset below which records go.

	// commit (next offsets to read, by partition), rebalance (partitions
	// now owned), log-start (each partition's log start offset)
	Group   string          `json:"group,omitempty"`
	Offsets map[int32]int64 `json:"offsets,omitempty"`
	Owned   []int32         `json:"owned,omitempty"`

	// fault
	Fault  string `json:"fault,omitempty"`
	Node   int32  `json:"node,omitempty"`
	Detail string `json:"detail,omitempty"`

	Err string `json:"err,omitempty"`

	Meta *Meta `json:"meta,omitempty"`

	// resources
	RSS int64 `json:"rss,omitempty"`
	FDs int   `json:"fds,omitempty"`

	// leader (Node is the node that answered)
	Leader int32 `json:"leader,omitempty"`
	Epoch  int32 `json:"epoch,omitempty"`
}

// Rec is one record a poll returned.
type Rec struct {
	P int32  `json:"p"`
	O int64  `json:"o"`
	V string `json:"v"`
}

// Recorder writes the history as it happens: one JSON line per operation,
// in the order the operations were recorded, each stamped with the time
// since the start. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	f     *os.File
	w     *bufio.Writer
	enc   *json.Encoder
	err   error
	n     int
}

// NewRecorder creates (or truncates) the history file at path.
func NewRecorder(path string, start time.Time) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	return &Recorder{start: start, f: f, w: w, enc: json.NewEncoder(w)}, nil
}

// Now is the time since the start, as stamped on operations.
func (r *Recorder) Now() float64 { return since(r.start) }

func since(start time.Time) float64 {
	return float64(time.Since(start).Microseconds()) / 1e6
}

// Add stamps op with the current time and appends it.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Stamped under the lock, so the file's order is the time order.
	op.T = r.Now()
	if r.err == nil {
		r.err = r.enc.Encode(&op)
		r.n++
	}
}

// Len is the number of operations recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Close flushes and closes the file, reporting the first write error.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return r.err
	}
	if err := r.w.Flush(); r.err == nil {
		r.err = err
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	r.f = nil
	if r.err != nil {
		return fmt.Errorf("history: %w", r.err)
	}
	return nil
}

// ReadHistory reads a history written by a Recorder.
func ReadHistory(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return DecodeHistory(f)
}

// DecodeHistory reads JSON-lines operations from r.
func DecodeHistory(r io.Reader) ([]Op, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 256<<10))
	var ops []Op
	for {
		var op Op
		if err := dec.Decode(&op); err == io.EOF {
			return ops, nil
		} else if err != nil {
			return ops, fmt.Errorf("history: operation %d: %w", len(ops)+1, err)
		}
		ops = append(ops, op)
	}
}
