package verify

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strings"
)

// WriteHTML writes the report: one self-contained HTML file (no script,
// no external resource) with the verdict, the plots and the tables.
func WriteHTML(w io.Writer, res *Result) error {
	kinds := map[string]bool{}
	for _, f := range res.Faults {
		kinds[f.Fault] = true
	}
	var legend []legendItem
	for _, k := range append(slices.Clone(AllFaults), byName...) {
		if kinds[k] {
			legend = append(legend, legendItem{k, faultColor(k)})
		}
	}
	counts := res.FaultCounts()
	var fc []string
	for _, k := range sortedKeys(counts) {
		fc = append(fc, fmt.Sprintf("%s %d", k, counts[k]))
	}
	data := reportData{
		R:          res,
		Charts:     charts(res),
		Legend:     legend,
		Kinds:      SafetyKinds,
		FaultCount: strings.Join(fc, ", "),
	}
	return reportTmpl.Execute(w, data)
}

type legendItem struct{ Name, Color string }

type reportData struct {
	R          *Result
	Charts     []template.HTML
	Legend     []legendItem
	Kinds      []string
	FaultCount string
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"count": func(t TopicResult, k string) int { return t.Counts[k] },
	"secs":  secs,
	"f1":    func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"listed": func(t TopicResult) []Anomaly {
		var out []Anomaly
		for _, a := range t.Anomalies {
			if a.Kind != KUnseen && len(out) < 100 {
				out = append(out, a)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
		return out
	},
	"healed": func(f FaultWindow) string {
		if f.End < 0 {
			return "never"
		}
		return fmt.Sprintf("%.1f", f.End)
	},
	"join": strings.Join,
	"mib":  func(b int64) int64 { return b >> 20 },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>weir verify: seed {{.R.Meta.Seed}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.verdict { display: inline-block; padding: 6px 14px; border-radius: 4px; font-weight: 600; color: #fff; }
.ok { background: #2a7d2a; } .bad { background: #b01c1c; }
table { border-collapse: collapse; margin: 6px 0; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { font-weight: 600; }
th { background: #f2f2f2; } td.l, th.l { text-align: left; }
td.nz { background: #fbd5d5; font-weight: 600; }
.plot { display: block; margin: 8px 0; background: #fff; border: 1px solid #ddd; }
.plot .title { font-weight: 600; font-size: 13px; }
.plot .tick { font-size: 11px; fill: #444; }
.plot .axis { stroke: #333; } .plot .grid { stroke: #eee; }
.plot .fault { opacity: 0.55; }
.legend span { display: inline-block; margin-right: 14px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -1px; }
.meta { color: #555; }
</style></head><body>
<h1>weir verify</h1>
<p class="meta">seed {{.R.Meta.Seed}} · {{.R.Meta.Nodes}} nodes · {{f1 .R.Duration}} s · {{.R.Ops}} operations · started {{.R.Meta.Started}}{{if .R.Meta.Unsafe}} · <b>--unsafe</b> (acks=1, unclean leader election, min.insync.replicas=1){{else if .R.Meta.MinInsync}} · min.insync.replicas {{.R.Meta.MinInsync}}{{end}}{{if .R.Meta.Attached}} · attached to running brokers{{end}}</p>
<p>{{if .R.OK}}<span class="verdict ok">no safety violation</span>{{else}}<span class="verdict bad">{{.R.Violations}} safety violations</span>{{end}}
&nbsp; faults injected: {{len .R.Faults}}{{if .FaultCount}} ({{.FaultCount}}){{end}}</p>
{{range .R.Errors}}<p class="meta">run error: {{.}}</p>{{end}}
{{range .R.Meta.Skipped}}<p class="meta">skipped: {{.}}</p>{{end}}

<h2>Timeline</h2>
<div class="legend">{{range .Legend}}<span><i style="background:{{.Color}}"></i>{{.Name}}</span>{{end}}<span><i style="background:#d00000"></i>anomaly</span></div>
{{range .Charts}}{{.}}{{end}}

<h2>Topics</h2>
<table><tr><th class="l"></th>{{range .R.Topics}}<th>{{.Name}}{{if not .Safety}}<br>(not judged){{end}}</th>{{end}}</tr>
<tr><td class="l">acks</td>{{range .R.Topics}}<td>{{.Acks}}</td>{{end}}</tr>
<tr><td class="l">sent</td>{{range .R.Topics}}<td>{{.Invoked}}</td>{{end}}</tr>
<tr><td class="l">acknowledged</td>{{range .R.Topics}}<td>{{.Acked}}</td>{{end}}</tr>
<tr><td class="l">failed</td>{{range .R.Topics}}<td>{{.Failed}}</td>{{end}}</tr>
<tr><td class="l">outcome unknown</td>{{range .R.Topics}}<td>{{.Indeterminate}}</td>{{end}}</tr>
<tr><td class="l">read</td>{{range .R.Topics}}<td>{{.Read}}</td>{{end}}</tr>
<tr><td class="l">acknowledged and read</td>{{range .R.Topics}}<td>{{.AckedRead}}</td>{{end}}</tr>
{{range $k := .Kinds}}<tr><td class="l">{{$k}}</td>{{range $.R.Topics}}{{$n := count . $k}}<td{{if $n}} class="nz"{{end}}>{{$n}}</td>{{end}}</tr>
{{end}}<tr><td class="l">unseen (not a violation)</td>{{range .R.Topics}}<td>{{count . "unseen"}}</td>{{end}}</tr>
</table>
<p class="meta">{{.R.Polls}} polls, {{.R.Commits}} commits, {{.R.Deletes}} deletes. Lost: acknowledged, never read, while later offsets of its partition were. Duplicate: one value at two offsets. Inconsistent offsets: one offset seen with two values. Unexpected: read, never sent. Resurrected: a log start, or the final read, below where a DeleteRecords completed before. Unseen (not a violation): acknowledged, never read, nothing after it read.</p>

{{range $t := .R.Topics}}{{$l := listed $t}}{{if $l}}
<h2>Anomalies on {{$t.Name}} (first {{len $l}})</h2>
<table><tr><th>time (s)</th><th class="l">kind</th><th>partition</th><th>offset</th><th class="l">process</th><th class="l">what</th></tr>
{{range $l}}<tr><td>{{f2 .T}}</td><td class="l">{{.Kind}}</td><td>{{.Partition}}</td><td>{{.Offset}}</td><td class="l">{{.Proc}}</td><td class="l">{{.Detail}}</td></tr>
{{end}}</table>{{end}}{{end}}

{{if .R.Faults}}
<h2>Availability by fault</h2>
<table><tr><th class="l">fault</th><th>count</th><th>seconds</th><th>acknowledged/s during</th><th>mean recovery</th><th>max recovery</th></tr>
{{range .R.Avail}}<tr><td class="l">{{.Fault}}</td><td>{{.Count}}</td><td>{{f1 .Seconds}}</td><td>{{f1 .Rate}}</td><td>{{secs .MeanRecover}}</td><td>{{secs .MaxRecover}}</td></tr>
{{end}}<tr><td class="l">(no fault)</td><td></td><td></td><td>{{f1 .R.Baseline}}</td><td></td><td></td></tr></table>
<p class="meta">Recovery: from the heal until every partition acknowledged a send invoked after it.</p>

<h2>Faults</h2>
<table><tr><th>start (s)</th><th>heal (s)</th><th class="l">fault</th><th>node</th><th class="l">what</th><th>acknowledged/s</th><th>recovery</th></tr>
{{range .R.Faults}}<tr><td>{{f1 .Start}}</td><td>{{healed .}}</td><td class="l">{{.Fault}}</td><td>{{.Node}}</td><td class="l">{{.Detail}}</td><td>{{f1 .Rate}}</td><td>{{secs .Recovery}}</td></tr>
{{end}}</table>{{end}}
{{if .R.Resources}}
<h2>Nodes</h2>
<table><tr><th>node</th><th>peak RSS (MiB)</th><th>peak open descriptors</th></tr>
{{range .R.Resources}}<tr><td>{{.Node}}</td><td>{{mib .PeakRSS}}</td><td>{{.PeakFDs}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))
