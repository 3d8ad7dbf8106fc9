package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/weir-project/weir/bench/internal/stats"
)

// Headline workload of the targets: 1 KiB records, 8 partitions, one
// producer (the figures are for a few partitions, 1 KiB).
const (
	headSize       = 1024
	headPartitions = 8
)

// Names of the limits and of the cluster case's series.
const (
	LimitLoopback     = "loopback TCP"
	LimitClient       = "client limit"
	LimitStore        = "store floor"
	LimitFileAppend   = "file append"
	LimitFileFsync    = "file append + fsync"
	LimitSendfile     = "sendfile"
	LimitSendfileCold = "sendfile from disk"
	ClusterRF3        = "weir 3-node RF3 acks=-1"
	ClusterSingle     = "weir 1-node acks=1"
)

// Target is one line of the targets with what this run measured.
type Target struct {
	Goal     string
	Measured string
	Met      string // "met", "not met", or "not measured"
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// ratioTarget compares median(a/b) round by round with want: at least
// (atLeast) or at most.
func ratioTarget(goal string, a, b *Series, cpu bool, want float64, atLeast bool) Target {
	t := Target{Goal: goal, Met: "not measured", Measured: "—"}
	if a == nil || b == nil {
		return t
	}
	var s stats.Summary
	if cpu {
		s = ratio(a.CPUPerGB, b.CPUPerGB)
	} else {
		s = ratio(a.MBps, b.MBps)
	}
	if s.N == 0 {
		return t
	}
	t.Measured = ratioText(s)
	if atLeast {
		t.Met = verdict(s.Median >= want)
	} else {
		t.Met = verdict(s.Median <= want)
	}
	return t
}

// peerOf is the named series of the case with id, or nil.
func (r *Run) peerOf(id, name string) *Series {
	c := r.Find(id)
	if c == nil {
		return nil
	}
	return c.Peer(name)
}

// Targets evaluates the targets on this run.
func (r *Run) Targets() []Target {
	prod1 := CaseID(Produce, headSize, headPartitions, 1, 1)
	prodAll := CaseID(Produce, headSize, headPartitions, 1, -1)
	cons := CaseID(Consume, headSize, headPartitions, 1, 1)
	clus := CaseID(Cluster, headSize, headPartitions, 1, -1)
	w := func(id string) *Series { return r.peerOf(id, "weir") }
	// Each throughput and CPU target is read twice: with franz-go (the
	// target itself) and with the minimal client, whose own cost is a
	// fraction of franz-go's, so its reading says what the broker does
	// when the client is not what bounds it.
	mprod1 := CaseID(ProduceMinimal, headSize, headPartitions, 1, 1)
	mprodAll := CaseID(ProduceMinimal, headSize, headPartitions, 1, -1)
	mcons := CaseID(ConsumeMinimal, headSize, headPartitions, 1, 1)
	type goal struct {
		text         string
		id, minID    string
		peer         string
		cpu, atLeast bool
		want         float64
	}
	goals := []goal{
		{"CPU per GB, produce acks=1: at most 0.5x kfake", prod1, mprod1, "kfake", true, false, 0.5},
		{"CPU per GB, produce acks=-1: at most 0.5x kfake", prodAll, mprodAll, "kfake", true, false, 0.5},
		{"CPU per GB, consume: at most 0.5x kfake", cons, mcons, "kfake", true, false, 0.5},
		{"Produce 1 KiB acks=1: at least 1.5x kfake", prod1, mprod1, "kfake", false, true, 1.5},
		{"Produce 1 KiB acks=1: at least 3x JetStream", prod1, "", "JetStream", false, true, 3},
		{"Produce 1 KiB acks=1: at least 0.5 of the loopback limit", prod1, mprod1, LimitLoopback, false, true, 0.5},
		{"Consume from page cache: at least 2x kfake", cons, mcons, "kfake", false, true, 2},
		{"Consume from page cache: at least 0.6 of the loopback limit", cons, mcons, LimitLoopback, false, true, 0.6},
	}
	var ts []Target
	for _, g := range goals {
		ts = append(ts, ratioTarget(g.text, w(g.id), r.peerOf(g.id, g.peer), g.cpu, g.want, g.atLeast))
		if g.minID != "" && r.Find(g.minID) != nil {
			ts = append(ts, ratioTarget("the same with the minimal client", w(g.minID), r.peerOf(g.minID, g.peer), g.cpu, g.want, g.atLeast))
		}
	}
	ts = append(ts, ratioTarget("RF 3 acks=-1 on 3 nodes: at least 0.4x one node acks=1", r.peerOf(clus, ClusterRF3), r.peerOf(clus, ClusterSingle), false, 0.4, true))
	ts = append(ts, r.latencyTargets()...)
	ts = append(ts, r.startupTargets()...)
	return append(ts, r.recoveryTarget())
}

// References are figures beside the targets that say where a target's
// bound lies. The client limit is what the same clients reach against a
// broker that does nothing (the sink): weir's throughput as a fraction of
// it, and the limit itself as a fraction of the loopback limit, which is
// the most any broker could reach with these clients on this machine.
func (r *Run) References() []Target {
	var out []Target
	ref := func(goal string, a, b *Series) {
		t := ratioTarget(goal, a, b, false, 0, true)
		if t.Measured != "—" {
			t.Met = "reference"
		}
		out = append(out, t)
	}
	cpuRef := func(goal string, a, b *Series) {
		t := ratioTarget(goal, a, b, true, 0, true)
		if t.Measured != "—" {
			t.Met = "reference"
		}
		out = append(out, t)
	}
	for _, acks := range []int{1, -1} {
		id := CaseID(Produce, headSize, headPartitions, 1, acks)
		ref(fmt.Sprintf("Produce 1 KiB acks=%d as a fraction of the client limit", acks),
			r.peerOf(id, "weir"), r.peerOf(id, LimitClient))
	}
	for _, acks := range []int{1, -1} {
		id := CaseID(Produce, headSize, headPartitions, 1, acks)
		floor := r.peerOf(id, LimitStore)
		cpuRef(fmt.Sprintf("CPU per GB, produce acks=%d: the store floor (receive, CRC-32C and page-cache append of the same bytes on one thread, no protocol) as a multiple of kfake's (the 0.5x target is out of reach for any broker that copies into the page cache if this is above 0.5x)", acks),
			floor, r.peerOf(id, "kfake"))
		cpuRef(fmt.Sprintf("CPU per GB, produce acks=%d: weir as a multiple of the store floor", acks), r.peerOf(id, "weir"), floor)
	}
	prod1 := CaseID(Produce, headSize, headPartitions, 1, 1)
	ref("Produce 1 KiB acks=1: the client limit as a fraction of the loopback limit (the most any broker reaches with this client)",
		r.peerOf(prod1, LimitClient), r.peerOf(prod1, LimitLoopback))
	cons := CaseID(Consume, headSize, headPartitions, 1, 1)
	bound := ClientBound(r.peerOf(cons, "weir"), r.Machine.Cores)
	ref("Consume as a fraction of the client bound (the cores / the consumer's own CPU per GB)", r.peerOf(cons, "weir"), bound)
	ref("Consume: the client bound as a multiple of kfake (the most any broker could reach)", bound, r.peerOf(cons, "kfake"))
	ref("Consume: the client bound as a fraction of the loopback limit", bound, r.peerOf(cons, LimitLoopback))
	// franz-go decodes all of one broker's fetch responses on one
	// goroutine, so against one broker the consumer runs on about one
	// core: the one-core bound is the closer ceiling.
	one := ClientBound(r.peerOf(cons, "weir"), 1)
	ref("Consume as a fraction of the one-core client bound (1 core / the consumer's CPU per GB; franz-go decodes a broker's fetches on one goroutine)",
		r.peerOf(cons, "weir"), one)
	ref("Consume: the one-core client bound as a multiple of kfake", one, r.peerOf(cons, "kfake"))
	return out
}

// latencyTargets judge the target at half of the produce peak, and show
// the same at half of the end-to-end peak as a second reading.
func (r *Run) latencyTargets() []Target {
	produce := Target{Goal: "p99 end-to-end latency at half of peak (one node): below 5 ms", Measured: "—", Met: "not measured"}
	e2e := Target{Goal: "the same at half of the end-to-end peak (producer, broker and consumer together)", Measured: "—", Met: "not measured"}
	minimal := slices.ContainsFunc(r.Latency, func(l Latency) bool { return l.Peer == "weir" && l.Minimal })
	mProduce := Target{Goal: "the same with the minimal client", Measured: "—", Met: "not measured"}
	mE2E := mProduce
	for _, l := range r.Latency {
		if l.Peer != "weir" || l.PeakMBps == 0 || len(l.Rounds) == 0 {
			continue
		}
		var p99 []time.Duration
		for _, rd := range l.Rounds {
			p99 = append(p99, rd.P99)
		}
		s := durSummary(p99)
		t := &produce
		switch {
		case l.EndToEnd && l.Minimal:
			t = &mE2E
		case l.EndToEnd:
			t = &e2e
		case l.Minimal:
			t = &mProduce
		}
		t.Measured = spread(s) + " ms"
		t.Met = verdict(s.Median < 5)
	}
	if !minimal {
		return []Target{produce, e2e}
	}
	return []Target{produce, mProduce, e2e, mE2E}
}

func (r *Run) startupTargets() []Target {
	start := Target{Goal: "10,000 partitions on one node: start in under 10 s", Measured: "—", Met: "not measured"}
	rss := Target{Goal: "10,000 partitions on one node: idle RSS under 1 GiB", Measured: "—", Met: "not measured"}
	if s := r.Startup; s != nil {
		scope := ""
		if s.Partitions != 10000 {
			scope = fmt.Sprintf(" (%d partitions only: quick run)", s.Partitions)
		}
		start.Measured = secs(s.ToReady) + " s" + scope
		start.Met = verdict(s.Partitions >= 10000 && s.ToReady < 10*time.Second)
		rss.Measured = fmt.Sprintf("%s MiB%s", num(float64(s.IdleRSS)/(1<<20)), scope)
		rss.Met = verdict(s.Partitions >= 10000 && s.IdleRSS < 1<<30)
		if s.Partitions < 10000 {
			start.Met, rss.Met = "not measured", "not measured"
		}
	}
	return []Target{start, rss}
}

func (r *Run) recoveryTarget() Target {
	t := Target{Goal: "Recovery after kill -9 holding 1 GiB unflushed: under 5 s", Measured: "—", Met: "not measured"}
	rc := r.Recovery
	if rc == nil || len(rc.Rounds) == 0 {
		return t
	}
	var ready []time.Duration
	for _, rd := range rc.Rounds {
		ready = append(ready, rd.ToReady)
	}
	s := durSummary(ready)
	t.Measured = fmt.Sprintf("%s s with %s MiB", num(s.Median/1000), num(float64(rc.Bytes)/(1<<20)))
	if rc.Bytes < 1<<30 {
		t.Measured += " (quick run)"
		t.Met = "not measured"
		return t
	}
	t.Met = verdict(s.Median < 5000)
	return t
}
