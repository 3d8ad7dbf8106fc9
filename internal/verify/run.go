package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Files a run writes into Options.Dir.
const (
	HistoryFile = "history.jsonl"
	ResultFile  = "result.json"
	ReportFile  = "report.html"
)

// Run starts (or attaches to) a cluster, runs the workload and the
// nemesis for o.Duration, heals everything, reads every partition to its
// end, and checks the history. The result is also written to o.Dir
// (result.json, report.html beside history.jsonl). The error is about
// the run itself (a cluster that would not start, a final read that
// could not finish); anomalies are in the result.
func Run(ctx context.Context, o Options) (*Result, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("output dir: %w", err)
	}
	logf := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "verify: "+format+"\n", args...)
		}
	}
	start := time.Now()
	rec, err := NewRecorder(filepath.Join(o.Dir, HistoryFile), start)
	if err != nil {
		return nil, err
	}
	defer rec.Close()

	var e *env
	var skipped []string
	if len(o.Brokers) > 0 {
		e, err = attach(ctx, o.Brokers)
	} else {
		logf("starting a cluster of %d nodes", o.Nodes)
		e, skipped, err = startLocal(ctx, o, logf)
	}
	if err != nil {
		return nil, err
	}
	// The guard may end the run: everything below runs under runCtx.
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	g := &guard{}
	guardCtx, stopGuard := context.WithCancel(ctx)
	defer stopGuard()
	guardDone := make(chan struct{})
	go func() {
		defer close(guardDone)
		g.run(guardCtx, e, cancelRun)
	}()
	stopped := false
	stopEnv := func() {
		if !stopped {
			stopped = true
			e.stop(logf)
		}
	}
	defer stopEnv()
	kinds, more := available(e, o.Faults)
	skipped = append(skipped, more...)
	for _, s := range more {
		logf("fault skipped: %s", s)
	}

	topics := workloadTopics(o, e.lc == nil, start)
	rf := min(replicationFactor, len(e.ids))
	minISR := min(2, rf)
	switch {
	case o.Unsafe:
		minISR = 1
	case o.MinInsync > rf:
		return nil, fmt.Errorf("--min-insync %d: above the replication factor, %d (%d brokers)", o.MinInsync, rf, len(e.ids))
	case o.MinInsync > 0:
		minISR = o.MinInsync
	}
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap...))
	if err != nil {
		return nil, err
	}
	defer adminCl.Close()
	adm := kadm.NewClient(adminCl)
	if err := createTopics(ctx, adm, topics, int16(rf), minISR); err != nil {
		return nil, err
	}
	nem := &nemesis{e: e, adm: adm, o: o, rec: rec, st: newStats(), rng: rand.New(rand.NewPCG(uint64(o.Seed), 0x9e3779b9)),
		main: topics[0], topics: topics, kinds: kinds, logf: logf}
	if _, err := nem.waitHealthy(ctx, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	rec.Add(Op{F: FMeta, Type: TInfo, Proc: "verify", Meta: &Meta{
		Seed: o.Seed, Nodes: len(e.ids), Unsafe: o.Unsafe, Faults: kinds, Topics: topics,
		Started: start.UTC().Format(time.RFC3339), Attached: e.lc == nil, Skipped: skipped, GroupProtocol: o.GroupProtocol,
		MinInsync: minISR,
	}})
	e.obs.recordLeaders(rec.Add)
	logf("workload on %s: %d producers, %d sends/s, %d assigned consumers, %d group members (%s protocol); faults: %v",
		names(topics), o.Producers, o.Rate, o.Assigned, o.GroupMembers, o.GroupProtocol, kinds)

	w, err := startWorkload(ctx, o, e, topics, rec, nem.st)
	if err != nil {
		return nil, err
	}
	progressDone := make(chan struct{})
	progressCtx, stopProgress := context.WithCancel(ctx)
	go func() {
		defer close(progressDone)
		progress(progressCtx, o, start, nem)
	}()
	nemDone := make(chan struct{})
	go func() {
		defer close(nemDone)
		nem.run(w.ctx, start.Add(o.Duration))
	}()
	sleep(ctx, time.Until(start.Add(o.Duration)))
	<-nemDone // it heals what it broke before returning; it may outlast Duration

	var runErr error
	// Interrupted (Ctrl-C, or the guard): check what there is, quickly.
	hurry := ctx.Err() != nil
	if hurry {
		runErr = errors.New("interrupted: the final read may be partial")
	}
	logf("stopping the producers")
	w.stopProducers(hurry)
	if hurry {
		// No waiting for the cluster's health.
	} else if _, err := nem.waitHealthy(context.Background(), 90*time.Second); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("cluster after the faults: %w", err))
		rec.Add(Op{F: FFault, Type: TInfo, Proc: "verify", Err: "before the final read: " + err.Error()})
	}
	w.stopConsumers()
	stopProgress()
	<-progressDone
	logf("final read of every partition")
	if err := w.finalRead(hurry); err != nil {
		runErr = errors.Join(runErr, err)
		rec.Add(Op{F: FFault, Type: TInfo, Proc: "verify", Err: err.Error()})
	}
	w.close()
	stopGuard()
	<-guardDone
	for _, op := range g.ops() {
		rec.Add(op)
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		runErr = errors.Join(runErr, cause)
		rec.Add(Op{F: FFault, Type: TInfo, Proc: "verify", Err: cause.Error()})
	}
	if err := rec.Close(); err != nil {
		return nil, err
	}
	if e.lc != nil {
		logf("stopping the cluster")
	}
	stopEnv()

	res, err := CheckFile(filepath.Join(o.Dir, HistoryFile))
	if err != nil {
		return nil, err
	}
	if err := WriteOutputs(o.Dir, res); err != nil {
		return res, errors.Join(runErr, err)
	}
	return res, runErr
}

// CheckFile checks a saved history.
func CheckFile(path string) (*Result, error) {
	ops, err := ReadHistory(path)
	if err != nil {
		return nil, err
	}
	return Check(ops), nil
}

// WriteOutputs writes result.json and report.html into dir.
func WriteOutputs(dir string, res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ResultFile), b, 0o644); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, ReportFile))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := WriteHTML(f, res); err != nil {
		f.Close()
		return fmt.Errorf("report: %w", err)
	}
	return f.Close()
}

// workloadTopics names the topics: fresh names when attached, so that no
// earlier data is mistaken for this run's.
func workloadTopics(o Options, attached bool, start time.Time) []TopicInfo {
	suffix := ""
	if attached {
		suffix = fmt.Sprintf("-%d-%d", o.Seed, start.Unix())
	}
	acks := "all"
	if o.Unsafe {
		acks = "1"
	}
	ts := []TopicInfo{{Name: "verify" + suffix, Partitions: o.Partitions, Acks: acks, Safety: true}}
	if o.Acks1 && !o.Unsafe {
		ts = append(ts, TopicInfo{Name: "verify-acks1" + suffix, Partitions: o.Partitions, Acks: "1"})
	}
	return ts
}
