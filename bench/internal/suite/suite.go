// Package suite runs the benchmark cases against weir, kfake
// and JetStream and the machine's limits, and collects a report.Run.
package suite

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"time"

	"github.com/weir-project/weir/bench/internal/limits"
	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/report"
	"github.com/weir-project/weir/bench/internal/stats"
)

// Config is what to run and how long.
type Config struct {
	Quick          bool
	Rounds         int
	Duration       time.Duration // each produce run
	MaxBytes       int64         // cap of each produce run
	Warm           int64         // memory to touch and free before each produce run (see hostmem)
	Cases          *regexp.Regexp
	Tmp            string // parent of every data dir
	Latency        time.Duration
	Sustained      time.Duration
	DiskBytes      int64 // disk bandwidth measurement
	Recovery       int64 // unflushed bytes at the kill
	RecoveryRounds int
	ManyParts      int   // partitions of the start-up case
	Sizes          []int // record sizes of the produce matrix
	Producers      []int
	Command        string
	Log            *slog.Logger
}

// Defaults returns the full run's settings, or the quick smoke run's.
func Defaults(quick bool) Config {
	c := Config{
		Rounds: 3, Duration: 3 * time.Second, MaxBytes: 1 << 30,
		Latency: 5 * time.Second, Sustained: 20 * time.Second, DiskBytes: 2 << 30,
		Recovery: 1 << 30, RecoveryRounds: 3, ManyParts: 10000, Sizes: []int{1024, 100}, Producers: []int{1, 4},
	}
	if quick {
		c = Config{
			Quick: true, Rounds: 2, Duration: 700 * time.Millisecond, MaxBytes: 128 << 20,
			Latency: 1500 * time.Millisecond, Sustained: 3 * time.Second, DiskBytes: 128 << 20,
			Recovery: 64 << 20, RecoveryRounds: 1, ManyParts: 200, Sizes: []int{1024}, Producers: []int{1},
		}
	}
	return c
}

// Suite is one run in progress.
type Suite struct {
	cfg  Config
	bins peer.Binaries
	log  *slog.Logger
	run  *report.Run
	seq  int
}

// New prepares a run with built binaries.
func New(cfg Config, bins peer.Binaries, machine report.Machine) *Suite {
	return &Suite{cfg: cfg, bins: bins, log: cfg.Log, run: &report.Run{
		Machine: machine,
		Settings: report.Settings{Quick: cfg.Quick, Rounds: cfg.Rounds, Duration: cfg.Duration,
			MaxBytes: cfg.MaxBytes, Warm: cfg.Warm, Command: cfg.Command},
	}}
}

// selected reports whether the case named id is to run.
func (s *Suite) selected(id string) bool { return s.cfg.Cases == nil || s.cfg.Cases.MatchString(id) }

// Run runs every selected case and returns what was measured. A failed
// measurement is noted and left out; only a broken setup stops the run.
func (s *Suite) Run(ctx context.Context) (*report.Run, error) {
	start := time.Now()
	groups := []struct {
		name string
		run  func(context.Context) error
	}{
		{"produce matrix", s.produceMatrix},
		{"produce with fsync", s.produceFsync},
		{"latency", s.latency},
		{"cluster", s.cluster},
		{"sustained", s.sustained},
		{"many partitions", s.manyPartitions},
		{"recovery", s.recovery},
	}
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := g.run(ctx); err != nil {
			s.note("%s: %v", g.name, err)
		}
		s.log.Info("group done", "group", g.name, "took", time.Since(t0).Round(time.Second))
	}
	s.run.Took = time.Since(start)
	return s.run, nil
}

// note records a failure for the report and the log.
func (s *Suite) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.log.Warn("failure noted for the report", "err", msg)
	if len(msg) > 600 {
		msg = msg[:600] + "…"
	}
	s.run.Notes = append(s.run.Notes, msg)
}

// topic is a fresh topic name for one measurement.
func (s *Suite) topic() string {
	s.seq++
	return fmt.Sprintf("bench-%d", s.seq)
}

// rotate returns xs starting at index r mod len: round r's order.
func rotate[T any](xs []T, r int) []T {
	n := len(xs)
	out := make([]T, 0, n)
	for i := range n {
		out = append(out, xs[(i+r)%n])
	}
	return out
}

// figures converts a result into the series' units.
func figures(res load.Result) (mbps, cpuPerGB float64) {
	return stats.MBps(res.Bytes, res.Elapsed), stats.PerGB(res.CPU, res.Bytes)
}

// addRound appends one round's result to a series, NaN for a failed one.
func addRound(se *report.Series, res load.Result, ok bool) {
	if !ok {
		se.MBps, se.CPUPerGB = append(se.MBps, nan), append(se.CPUPerGB, nan)
		se.ClientCPUPerGB = append(se.ClientCPUPerGB, nan)
		return
	}
	mbps, cpu := figures(res)
	se.MBps, se.CPUPerGB = append(se.MBps, mbps), append(se.CPUPerGB, cpu)
	se.ClientCPUPerGB = append(se.ClientCPUPerGB, stats.PerGB(res.ClientCPU, res.Bytes))
}

// addLimit appends one round of a limit.
func addLimit(se *report.Series, bytes int64, el time.Duration, ok bool) {
	if !ok {
		se.MBps = append(se.MBps, nan)
		return
	}
	se.MBps = append(se.MBps, stats.MBps(bytes, el))
}

// addLimitCPU appends one round of a limit that measures its own CPU.
func addLimitCPU(se *report.Series, r limits.Result, ok bool) {
	if !ok {
		se.MBps, se.CPUPerGB = append(se.MBps, nan), append(se.CPUPerGB, nan)
		return
	}
	se.MBps = append(se.MBps, stats.MBps(r.Bytes, r.Elapsed))
	se.CPUPerGB = append(se.CPUPerGB, stats.PerGB(r.CPU, r.Bytes))
}

// startAll starts brokers by their start functions, stopping those
// already started if one fails.
func (s *Suite) startAll(starts ...func() (*peer.Broker, error)) ([]*peer.Broker, error) {
	var out []*peer.Broker
	for _, st := range starts {
		t0 := time.Now()
		b, err := st()
		if err != nil {
			s.stopAll(out)
			return nil, err
		}
		s.log.Info("started", "broker", b.Name, "pids", b.PIDs(), "took", time.Since(t0).Round(time.Millisecond))
		out = append(out, b)
	}
	return out, nil
}

// stopAll stops brokers, each by its PIDs.
func (s *Suite) stopAll(bs []*peer.Broker) {
	for _, b := range bs {
		t0 := time.Now()
		if err := b.Stop(); err != nil {
			s.note("stop %s: %v", b.Name, err)
		}
		s.log.Info("stopped", "broker", b.Name, "took", time.Since(t0).Round(time.Millisecond))
	}
}

var nan = math.NaN()
