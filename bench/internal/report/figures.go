package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/weir-project/weir/bench/internal/stats"
)

// CaseID is the stable key of a case, shared by the suite (which fills
// cases) and the targets (which look them up).
func CaseID(kind string, size, partitions, producers, acks int) string {
	return fmt.Sprintf("%s/%s/p%d/c%d/acks%d", kind, SizeLabel(size), partitions, producers, acks)
}

// SizeLabel prints a record size as "1KiB" or "100B".
func SizeLabel(size int) string {
	if size >= 1024 && size%1024 == 0 {
		return fmt.Sprintf("%dKiB", size/1024)
	}
	return fmt.Sprintf("%dB", size)
}

// Label is a case's workload in words.
func (c Case) Label() string {
	parts := []string{strings.Replace(SizeLabel(c.RecordSize), "KiB", " KiB", 1),
		fmt.Sprintf("%d part", c.Partitions)}
	if c.Kind == Produce || c.Kind == ProduceFsync || c.Kind == Cluster || c.Kind == ProduceMinimal {
		parts = append(parts, fmt.Sprintf("%d prod", c.Producers), fmt.Sprintf("acks=%d", c.Acks))
	}
	return strings.Join(parts, " · ")
}

// Find returns the case with id, or nil.
func (r *Run) Find(id string) *Case {
	for i := range r.Cases {
		if r.Cases[i].ID == id {
			return &r.Cases[i]
		}
	}
	return nil
}

// Peer returns the series of the named broker or limit, or nil.
func (c *Case) Peer(name string) *Series {
	for i := range c.Peers {
		if c.Peers[i].Name == name {
			return &c.Peers[i]
		}
	}
	for i := range c.Limits {
		if c.Limits[i].Name == name {
			return &c.Limits[i]
		}
	}
	return nil
}

// ratio is the round-by-round ratio of a's to b's values.
func ratio(a, b []float64) stats.Summary { return stats.Summarize(stats.Ratios(a, b)) }

// num prints a figure with sensible digits, "—" for none.
func num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "—"
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// spread prints "median (min–max)", or just the value for one round.
func spread(s stats.Summary) string {
	switch {
	case s.N == 0:
		return "—"
	case s.N == 1 || s.Min == s.Max:
		return num(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

// ratioText prints a ratio summary as "1.23x (1.10–1.30)".
func ratioText(s stats.Summary) string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 || s.Min == s.Max {
		return num(s.Median) + "x"
	}
	return fmt.Sprintf("%sx (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

// ms prints a duration in milliseconds.
func ms(d time.Duration) string { return num(float64(d) / float64(time.Millisecond)) }

// secs prints a duration in seconds.
func secs(d time.Duration) string { return num(d.Seconds()) }

// durSummary summarises durations (in ms) across rounds.
func durSummary(ds []time.Duration) stats.Summary {
	var xs []float64
	for _, d := range ds {
		xs = append(xs, float64(d)/float64(time.Millisecond))
	}
	return stats.Summarize(xs)
}

// ClientBound is, round by round, the most any broker could move with
// these clients on this machine: every core running the clients alone, at
// the clients' CPU per GB measured in se's rounds. It assumes the clients
// scale to every core and the broker costs nothing, so no broker can
// exceed it; a target above it is out of reach with this client here.
func ClientBound(se *Series, cores int) *Series {
	if se == nil || cores <= 0 || len(se.ClientCPUPerGB) == 0 {
		return nil
	}
	out := &Series{Name: "client bound"}
	for _, x := range se.ClientCPUPerGB {
		if !(x > 0) {
			out.MBps = append(out.MBps, math.NaN())
			continue
		}
		out.MBps = append(out.MBps, float64(cores)*1e3/x)
	}
	return out
}
