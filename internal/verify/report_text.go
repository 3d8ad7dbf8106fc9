package verify

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// progress prints a line every few seconds while the run goes on.
func progress(ctx context.Context, o Options, start time.Time, n *nemesis) {
	if o.Progress == nil {
		return
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var lastAcked int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		acked := n.st.acked.Load()
		rate := float64(acked-lastAcked) / time.Since(last).Seconds()
		lastAcked, last = acked, time.Now()
		now := n.current()
		if now == "" {
			now = "no fault"
		}
		fmt.Fprintf(o.Progress, "verify %4.0fs/%.0fs  sent %d  acked %d (%.0f/s)  failed %d  read %d  commits %d  deletes %d  | %s\n",
			time.Since(start).Seconds(), o.Duration.Seconds(), n.st.invoked.Load(), acked, rate,
			n.st.failed.Load(), n.st.polled.Load(), n.st.commits.Load(), n.st.deletes.Load(), now)
	}
}

// WriteSummary prints the result as tables: per topic, anomalies, faults
// and availability, then the verdict.
func WriteSummary(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\nweir verify: seed %d, %d nodes, %.0f s, %d operations", res.Meta.Seed, res.Meta.Nodes, res.Duration, res.Ops)
	if res.Meta.Unsafe {
		fmt.Fprint(w, " (--unsafe)")
	} else if res.Meta.MinInsync > 0 {
		fmt.Fprintf(w, ", min.insync.replicas %d", res.Meta.MinInsync)
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOPIC\tACKS\tSENT\tACKED\tFAILED\tINDETERMINATE\tREAD\tACKED+READ\t"+strings.ToUpper(strings.Join(SafetyKinds, "\t"))+"\tUNSEEN")
	for _, t := range res.Topics {
		acks := t.Acks
		if !t.Safety {
			acks += " (not judged)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d", t.Name, acks, t.Invoked, t.Acked, t.Failed, t.Indeterminate, t.Read, t.AckedRead)
		for _, k := range append(slices.Clone(SafetyKinds), KUnseen) {
			fmt.Fprintf(tw, "\t%d", t.Counts[k])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "polls %d, commits %d, deletes %d\n", res.Polls, res.Commits, res.Deletes)

	for _, t := range res.Topics {
		shown := 0
		for _, a := range t.Anomalies {
			if a.Kind == KUnseen || shown >= 10 {
				continue
			}
			if shown == 0 {
				fmt.Fprintf(w, "\nanomalies on %s (first ones):\n", t.Name)
			}
			fmt.Fprintf(w, "  %7.2fs  %-22s %s-%d  %s\n", a.T, a.Kind, t.Name, a.Partition, a.Detail)
			shown++
		}
	}

	if len(res.Faults) > 0 {
		counts := res.FaultCounts()
		var kinds []string
		for k := range counts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
		fmt.Fprintf(w, "\nfaults injected: %d (%s)\n", len(res.Faults), strings.Join(parts, ", "))
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FAULT\tCOUNT\tSECONDS\tACKED/S DURING\tMEAN RECOVERY\tMAX RECOVERY")
		for _, a := range res.Avail {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%s\t%s\n", a.Fault, a.Count, a.Seconds, a.Rate, secs(a.MeanRecover), secs(a.MaxRecover))
		}
		fmt.Fprintf(tw, "(no fault)\t\t\t%.1f\t\t\n", res.Baseline)
		tw.Flush()
	}
	for _, r := range res.Resources {
		fmt.Fprintf(w, "node %d: peak RSS %d MiB, peak open descriptors %d\n", r.Node, r.PeakRSS>>20, r.PeakFDs)
	}
	for _, e := range res.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	for _, s := range res.Meta.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
	if res.OK() {
		fmt.Fprintln(w, "\nverdict: no safety violation")
	} else {
		fmt.Fprintf(w, "\nverdict: %d safety violations\n", res.Violations)
	}
}

func secs(s float64) string {
	switch {
	case s == RecoveryUnseen:
		return "after the run"
	case s < 0:
		return "never"
	}
	return fmt.Sprintf("%.2fs", s)
}
