package verify

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// hist builds a hand-made history, one operation per call, a tenth of a
// second apart.
type hist struct {
	ops []Op
	t   float64
	seq int64 // timedSend's next sequence
}

const topicA = "t"

func newHist() *hist {
	h := &hist{}
	h.add(Op{F: FMeta, Type: TInfo, Proc: "verify", Meta: &Meta{Seed: 1, Topics: []TopicInfo{
		{Name: topicA, Partitions: 2, Acks: "all", Safety: true},
		{Name: "t1", Partitions: 1, Acks: "1"},
	}}})
	return h
}

func (h *hist) add(op Op) *hist {
	h.t += 0.1
	op.T = h.t
	h.ops = append(h.ops, op)
	return h
}

// sent records an acknowledged send of proc's seq-th value.
func (h *hist) sent(proc string, seq int64, p int32, o int64) *hist {
	v := FormatValue(proc, seq)
	h.add(Op{F: FSend, Type: TInvoke, Proc: proc, Topic: topicA, Value: v, Partition: p})
	return h.add(Op{F: FSend, Type: TOK, Proc: proc, Topic: topicA, Value: v, Partition: p, Offset: o})
}

// timedSend records p1's next send to partition p, invoked at time at
// and acknowledged at ack (never if ack < 0). Such ops go in unsorted:
// checkTimed sorts them.
func (h *hist) timedSend(p int32, at, ack float64) {
	v := FormatValue("p1", h.seq)
	h.seq++
	h.ops = append(h.ops, Op{T: at, F: FSend, Type: TInvoke, Proc: "p1", Topic: topicA, Value: v, Partition: p})
	if ack >= 0 {
		h.ops = append(h.ops, Op{T: ack, F: FSend, Type: TOK, Proc: "p1", Topic: topicA, Value: v, Partition: p, Offset: h.seq})
	}
}

// window records a fault of kind on node from start to end.
func (h *hist) window(kind string, node int32, start, end float64) {
	h.ops = append(h.ops,
		Op{T: start, F: FFault, Type: TStart, Proc: "nemesis", Fault: kind, Node: node},
		Op{T: end, F: FFault, Type: TEnd, Proc: "nemesis", Fault: kind, Node: node})
}

// checkTimed checks the ops of timedSend and window in time order.
func (h *hist) checkTimed() *Result {
	slices.SortStableFunc(h.ops, func(a, b Op) int { return cmpFloat(a.T, b.T) })
	return Check(h.ops)
}

func (h *hist) poll(proc string, recs ...Rec) *hist {
	return h.add(Op{F: FPoll, Type: TOK, Proc: proc, Topic: topicA, Records: recs})
}

func rec(p int32, o int64, proc string, seq int64) Rec {
	return Rec{P: p, O: o, V: FormatValue(proc, seq)}
}

// only asserts that the history shows exactly the given anomaly counts on
// topicA (every other kind zero).
func only(t *testing.T, h *hist, want map[string]int) *Result {
	t.Helper()
	res := Check(h.ops)
	var got *TopicResult
	for i := range res.Topics {
		if res.Topics[i].Name == topicA {
			got = &res.Topics[i]
		}
	}
	if got == nil {
		t.Fatalf("no result for topic %s", topicA)
	}
	for _, k := range append(slices.Clone(SafetyKinds), KUnseen) {
		if got.Counts[k] != want[k] {
			t.Errorf("%s: %d, want %d; anomalies: %+v", k, got.Counts[k], want[k], got.Anomalies)
		}
	}
	wantViolations := 0
	for k, n := range want {
		if k != KUnseen {
			wantViolations += n
		}
	}
	if res.Violations != wantViolations {
		t.Errorf("violations %d, want %d", res.Violations, wantViolations)
	}
	return res
}

// clean is a healthy history: two producers, two partitions, every value
// read once by an assigned consumer and once by the final read, a group
// member committing forward.
func clean() *hist {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p2", 0, 1, 0).sent("p1", 1, 0, 1).sent("p2", 1, 0, 2).sent("p1", 2, 1, 1)
	h.poll("a1", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1))
	h.poll("a1", rec(0, 2, "p2", 1), rec(1, 0, "p2", 0))
	h.add(Op{F: FRebalance, Type: TOK, Proc: "g1", Group: "g", Owned: []int32{0, 1}})
	h.poll("g1", rec(0, 0, "p1", 0))
	h.add(Op{F: FCommit, Type: TInvoke, Proc: "g1", Group: "g", Topic: topicA, Offsets: map[int32]int64{0: 1}})
	h.add(Op{F: FCommit, Type: TOK, Proc: "g1", Group: "g", Topic: topicA, Offsets: map[int32]int64{0: 1}})
	h.poll("a1", rec(1, 1, "p1", 2))
	h.add(Op{F: FCommit, Type: TInvoke, Proc: "g1", Group: "g", Topic: topicA, Offsets: map[int32]int64{0: 3}})
	h.add(Op{F: FCommit, Type: TOK, Proc: "g1", Group: "g", Topic: topicA, Offsets: map[int32]int64{0: 3}})
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1), rec(0, 2, "p2", 1))
	h.poll("final", rec(1, 0, "p2", 0), rec(1, 1, "p1", 2))
	return h
}

func TestCheckClean(t *testing.T) {
	res := only(t, clean(), nil)
	if !res.OK() {
		t.Fatal("a clean history is not OK")
	}
	tr := res.Topics[0]
	if tr.Invoked != 5 || tr.Acked != 5 || tr.Read != 5 || tr.AckedRead != 5 {
		t.Fatalf("counts %+v", tr)
	}
}

func TestCheckCleanWithFailuresAndIndeterminate(t *testing.T) {
	h := clean()
	// A failed send and an indeterminate one that was in fact written:
	// neither is an anomaly.
	h.add(Op{F: FSend, Type: TInvoke, Proc: "p1", Topic: topicA, Value: FormatValue("p1", 3), Partition: 0})
	h.add(Op{F: FSend, Type: TFail, Proc: "p1", Topic: topicA, Value: FormatValue("p1", 3), Err: "NOT_ENOUGH_REPLICAS"})
	h.add(Op{F: FSend, Type: TInvoke, Proc: "p1", Topic: topicA, Value: FormatValue("p1", 4), Partition: 0})
	h.add(Op{F: FSend, Type: TInfo, Proc: "p1", Topic: topicA, Value: FormatValue("p1", 4), Err: "timeout"})
	h.poll("final", rec(0, 3, "p1", 4))
	res := only(t, h, nil)
	if tr := res.Topics[0]; tr.Failed != 1 || tr.Indeterminate != 1 || tr.Read != 6 {
		t.Fatalf("counts %+v", tr)
	}
}

func TestCheckLost(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1).sent("p1", 2, 0, 2)
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 2, "p1", 2))
	// Offset 1 was never read by anyone, so the final read did not skip a
	// known offset: this is loss, not a poll skip.
	res := only(t, h, map[string]int{KLost: 1})
	if a := res.Topics[0].Anomalies[0]; a.Value != "p1-1" || a.Offset != 1 {
		t.Fatalf("lost %+v", a)
	}
}

func TestCheckUnseenIsNotLoss(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1)
	h.poll("final", rec(0, 0, "p1", 0))
	only(t, h, map[string]int{KUnseen: 1})
}

func TestCheckDuplicate(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1)
	// A retry stored p1-1 twice.
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1), rec(0, 2, "p1", 1))
	only(t, h, map[string]int{KDuplicate: 1})
}

func TestCheckInconsistentOffsets(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p2", 0, 0, 1)
	h.poll("a1", rec(0, 0, "p1", 0), rec(0, 1, "p2", 0))
	// A second reader finds p1-0 at offset 1 too (a rewritten log):
	// offset 1 holds two values, and p1-0 sits at two offsets.
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p1", 0))
	only(t, h, map[string]int{KInconsistent: 1, KDuplicate: 1, KNonmonotonicPoll: 0})
}

func TestCheckInconsistentWithAck(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1).sent("p2", 0, 0, 2)
	// The ack said p1-1 is at offset 1, reads find p2-0 there and p1-1
	// nowhere: inconsistent, p2-0 at two offsets, p1-1 lost.
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p2", 0), rec(0, 2, "p2", 0))
	only(t, h, map[string]int{KInconsistent: 1, KDuplicate: 1, KLost: 1})
}

func TestCheckUnexpected(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0)
	h.poll("final", rec(0, 0, "p1", 0), Rec{P: 0, O: 1, V: "garbage"}, rec(0, 2, "p9", 7))
	only(t, h, map[string]int{KUnexpected: 2})
}

func TestCheckNonmonotonicSend(t *testing.T) {
	h := newHist()
	// p1 sent seq 0 then seq 1, but seq 1 landed before seq 0.
	h.sent("p1", 0, 0, 1).sent("p1", 1, 0, 0)
	h.poll("final", rec(0, 0, "p1", 1), rec(0, 1, "p1", 0))
	only(t, h, map[string]int{KNonmonotonicSend: 1})
}

func TestCheckNonmonotonicPoll(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1)
	h.poll("g1", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1))
	h.poll("g1", rec(0, 0, "p1", 0)) // went back with no rebalance
	h.add(Op{F: FRebalance, Type: TOK, Proc: "g1", Group: "g", Owned: []int32{0}})
	h.poll("g1", rec(0, 0, "p1", 0)) // after a rebalance: allowed
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1))
	only(t, h, map[string]int{KNonmonotonicPoll: 1})
}

func TestCheckPollSkip(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1).sent("p1", 2, 0, 2)
	h.poll("a1", rec(0, 0, "p1", 0), rec(0, 2, "p1", 2)) // skipped offset 1
	h.poll("g1", rec(0, 0, "p1", 0), rec(0, 2, "p1", 2)) // group members may skip (commits move them)
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1), rec(0, 2, "p1", 2))
	res := only(t, h, map[string]int{KPollSkip: 1})
	if a := res.Topics[0].Anomalies[0]; a.Proc != "a1" || a.Offset != 2 {
		t.Fatalf("skip %+v", a)
	}
}

func TestCheckCommitBackwards(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0)
	h.poll("final", rec(0, 0, "p1", 0))
	commit := func(proc string, typ string, o int64) {
		h.add(Op{F: FCommit, Type: typ, Proc: proc, Group: "g", Topic: topicA, Offsets: map[int32]int64{0: o}})
	}
	commit("g1", TInvoke, 5)
	commit("g1", TOK, 5)
	// Concurrent with nothing completed before it: fine whatever its value.
	commit("g2", TInvoke, 7)
	commit("g1", TInvoke, 3)
	commit("g2", TOK, 7)
	commit("g1", TOK, 3) // began after 5 completed: backwards
	commit("g2", TInvoke, 6)
	commit("g2", TFail, 6) // failed commits do not count
	only(t, h, map[string]int{KCommitBackwards: 1})
}

func TestCheckStaleCommitRead(t *testing.T) {
	h := newHist()
	for o := range int64(12) {
		h.sent("p1", o, 0, o)
	}
	commit := func(proc string, o int64) {
		for _, typ := range []string{TInvoke, TOK} {
			h.add(Op{F: FCommit, Type: typ, Proc: proc, Group: "g", Topic: topicA, Offsets: map[int32]int64{0: o}})
		}
	}
	rebalance := func(proc, how string) {
		h.add(Op{F: FRebalance, Type: TOK, Proc: proc, Group: "g", Topic: topicA, Detail: how, Owned: []int32{0}})
	}
	rebalance("g1", "assigned")
	h.poll("g1", rec(0, 0, "p1", 0)) // nothing committed yet
	commit("g1", 10)
	rebalance("g1", "revoked")
	rebalance("g2", "assigned")
	h.poll("g2", rec(0, 10, "p1", 10)) // from the commit: fine
	h.poll("g2", rec(0, 11, "p1", 11))
	rebalance("g2", "revoked")
	rebalance("g1", "assigned")
	h.poll("g1", rec(0, 5, "p1", 5)) // from before the commit of 10: stale
	h.poll("g1", rec(0, 6, "p1", 6)) // only the first read counts
	var all []Rec
	for o := range int64(12) {
		all = append(all, rec(0, o, "p1", o))
	}
	h.poll("final", all...)
	res := only(t, h, map[string]int{KStaleCommitRead: 1})
	if a := res.Topics[0].Anomalies[0]; a.Proc != "g1" || a.Offset != 5 {
		t.Fatalf("stale read %+v", a)
	}
}

func TestCheckSplitLeader(t *testing.T) {
	h := clean()
	named := func(node, p, epoch, leader int32) {
		h.add(Op{F: FLeader, Type: TInfo, Proc: "observer", Topic: topicA, Partition: p, Node: node, Epoch: epoch, Leader: leader})
	}
	named(1, 0, 0, 3)
	named(2, 0, 0, 3) // the same word from another node
	named(1, 0, 1, 2) // a new epoch, a new leader
	named(3, 1, 1, 1) // another partition's epoch 1
	named(2, 0, 1, 1) // epoch 1 of partition 0 again: another leader
	named(3, 0, 1, 3) // the same split, counted once
	res := only(t, h, map[string]int{KSplitLeader: 1})
	if a := res.Topics[0].Anomalies; len(a) != 1 || a[0].Partition != 0 {
		t.Fatalf("anomalies %+v, want the split of partition 0", a)
	}
}

func TestCheckAcks1TopicIsNotASafetyViolation(t *testing.T) {
	h := newHist()
	h.add(Op{F: FSend, Type: TInvoke, Proc: "q1", Topic: "t1", Value: "q1-0"})
	h.add(Op{F: FSend, Type: TOK, Proc: "q1", Topic: "t1", Value: "q1-0", Offset: 0})
	h.add(Op{F: FSend, Type: TInvoke, Proc: "q1", Topic: "t1", Value: "q1-1"})
	h.add(Op{F: FSend, Type: TOK, Proc: "q1", Topic: "t1", Value: "q1-1", Offset: 1})
	h.add(Op{F: FPoll, Type: TOK, Proc: "final", Topic: "t1", Records: []Rec{{P: 0, O: 1, V: "q1-1"}}})
	res := Check(h.ops)
	if !res.OK() {
		t.Fatalf("loss on the acks=1 topic failed the run: %+v", res.Topics)
	}
	if res.Topics[1].Counts[KLost] != 1 {
		t.Fatalf("acks=1 topic: %+v", res.Topics[1])
	}
}

func TestAvailability(t *testing.T) {
	h := newHist()
	// 10 acks a second for 10 s on two partitions; a fault from 4 to 6 s
	// stops partition 1, which takes again 1.5 s after the heal.
	for i := range 100 {
		at := float64(i) / 10
		p := int32(i % 2)
		if p == 1 && at >= 4 && at < 7.5 {
			continue
		}
		h.timedSend(p, at, at+0.01)
	}
	h.window("kill", 2, 4, 6)
	res := h.checkTimed()
	if len(res.Faults) != 1 {
		t.Fatalf("faults %+v", res.Faults)
	}
	f := res.Faults[0]
	if f.Acked != 10 || f.Rate != 5 {
		t.Fatalf("window %+v, want 10 acks at 5/s", f)
	}
	if f.Recovery < 1.5 || f.Recovery > 1.52 {
		t.Fatalf("recovery %.3f, want 1.51", f.Recovery)
	}
	if len(res.Avail) != 1 || res.Avail[0].Fault != "kill" || res.Avail[0].MaxRecover != f.Recovery {
		t.Fatalf("availability %+v", res.Avail)
	}
	if len(res.Timeline) < 10 || res.Timeline[0].Acked != 10 {
		t.Fatalf("timeline %+v", res.Timeline[:2])
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	r, err := NewRecorder(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	src := clean().ops
	for _, op := range src {
		r.Add(op)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(src) {
		t.Fatalf("%d operations read back, want %d", len(got), len(src))
	}
	for i := range got {
		got[i].T, src[i].T = 0, 0
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(src[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("operation %d: %s, want %s", i, a, b)
		}
	}
	if res := Check(got); !res.OK() {
		t.Fatalf("re-read history: %+v", res.Topics)
	}
}

func TestParseValue(t *testing.T) {
	for _, v := range []string{"p1-0", "q12-99", "final-3"} {
		proc, seq, ok := ParseValue(v)
		if !ok || FormatValue(proc, seq) != v {
			t.Errorf("%s: %s %d %v", v, proc, seq, ok)
		}
	}
	for _, v := range []string{"", "-1", "p1-", "p1-x", "p1--2"} {
		if _, _, ok := ParseValue(v); ok {
			t.Errorf("%q parsed", v)
		}
	}
}

// TestRecoveryNeverOrUnseen: a partition that acknowledges nothing after
// a heal never recovered if the producers went on for the delivery
// timeout after it; a fault healed nearer the end than that is unseen,
// and left out of its kind's figures.
func TestRecoveryNeverOrUnseen(t *testing.T) {
	h := newHist()
	for i := range 500 { // 10 sends a second for 50 s
		at := float64(i) / 10
		p := int32(i % 2)
		ack := at + 0.01
		if p == 1 && at >= 4 {
			ack = -1
		}
		h.timedSend(p, at, ack)
	}
	h.window("kill", 2, 4, 6)
	h.window("pause", 3, 45, 47)
	res := h.checkTimed()
	if len(res.Faults) != 2 {
		t.Fatalf("faults %+v", res.Faults)
	}
	if r := res.Faults[0].Recovery; r != -1 {
		t.Errorf("kill healed 44 s before the end: recovery %v, want -1 (never)", r)
	}
	if r := res.Faults[1].Recovery; r != RecoveryUnseen {
		t.Errorf("pause healed 3 s before the end: recovery %v, want unseen", r)
	}
	for _, a := range res.Avail {
		want := -1.0
		if a.Fault == "pause" {
			want = RecoveryUnseen
		}
		if a.MaxRecover != want || a.MeanRecover != want {
			t.Errorf("%s: max %v mean %v, want %v", a.Fault, a.MaxRecover, a.MeanRecover, want)
		}
	}
	if got := secs(RecoveryUnseen); got != "after the run" {
		t.Errorf("secs(unseen) = %q", got)
	}
}

// deletesHist: partition 0 holds offsets 0..2, read by a1; a DeleteRecords
// below 2 completes. A log-start begun before it completed may answer 0;
// one begun after must answer 2 or more; a deletion that ended in info
// constrains nothing.
func deletesHist() *hist {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1).sent("p1", 2, 0, 2)
	h.poll("a1", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1), rec(0, 2, "p1", 2))
	h.add(Op{F: FLogStart, Type: TInvoke, Proc: "d", Topic: topicA})
	h.add(Op{F: FDelete, Type: TInvoke, Proc: "d2", Topic: topicA, Partition: 0, Offset: 2})
	h.add(Op{F: FDelete, Type: TOK, Proc: "d2", Topic: topicA, Partition: 0, Offset: 2})
	h.add(Op{F: FLogStart, Type: TOK, Proc: "d", Topic: topicA, Offsets: map[int32]int64{0: 0, 1: 0}})
	h.add(Op{F: FDelete, Type: TInvoke, Proc: "d", Topic: topicA, Partition: 0, Offset: 3})
	h.add(Op{F: FDelete, Type: TInfo, Proc: "d", Topic: topicA, Partition: 0, Offset: 3, Err: "REQUEST_TIMED_OUT"})
	h.add(Op{F: FLogStart, Type: TInvoke, Proc: "d", Topic: topicA})
	h.add(Op{F: FLogStart, Type: TOK, Proc: "d", Topic: topicA, Offsets: map[int32]int64{0: 2, 1: 0}})
	return h
}

func TestCheckDeletes(t *testing.T) {
	h := deletesHist()
	h.poll("final", rec(0, 2, "p1", 2))
	if res := only(t, h, nil); res.Deletes != 1 {
		t.Fatalf("deletes %d, want 1", res.Deletes)
	}
}

func TestCheckResurrected(t *testing.T) {
	h := deletesHist()
	h.add(Op{F: FLogStart, Type: TInvoke, Proc: "d", Topic: topicA})
	h.add(Op{F: FLogStart, Type: TOK, Proc: "d", Topic: topicA, Offsets: map[int32]int64{0: 1, 1: 0}})
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 1, "p1", 1), rec(0, 2, "p1", 2)) // counted once
	res := only(t, h, map[string]int{KResurrected: 2})
	if a := res.Topics[0].Anomalies; a[0].Offset != 1 || a[0].Proc != "d" || a[1].Offset != 0 || a[1].Proc != "final" {
		t.Fatalf("anomalies %+v", a)
	}
}
