package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sampleRun is a small run with known figures: weir at 600 MB/s and 1
// s/GB against kfake at 400 MB/s and 2 s/GB, and so on.
func sampleRun() *Run {
	prod := Case{ID: CaseID(Produce, 1024, 8, 1, 1), Kind: Produce, RecordSize: 1024, Partitions: 8, Producers: 1, Acks: 1,
		Peers: []Series{
			{Name: "weir", MBps: []float64{600, 500, 700}, CPUPerGB: []float64{1, 1, 1}, Batch: []float64{1 << 20, 1 << 20, 1 << 20}},
			{Name: "kfake", MBps: []float64{400, 500, 350}, CPUPerGB: []float64{2, 2, 2}},
			{Name: "JetStream", MBps: []float64{100, math.NaN(), 100}, CPUPerGB: []float64{5, math.NaN(), 5}},
		},
		Limits: []Series{{Name: LimitLoopback, MBps: []float64{1000, 1000, 1000}},
			{Name: LimitStore, MBps: []float64{900, 900, 900}, CPUPerGB: []float64{1.5, 1.5, 1.5}}},
	}
	cons := Case{ID: CaseID(Consume, 1024, 8, 1, 1), Kind: Consume, RecordSize: 1024, Partitions: 8, Producers: 1, Acks: 1,
		Peers: []Series{
			{Name: "weir", MBps: []float64{800}, CPUPerGB: []float64{0.2}, ClientCPUPerGB: []float64{2}},
			{Name: "kfake", MBps: []float64{500}, CPUPerGB: []float64{0.5}},
		},
		Limits: []Series{{Name: LimitLoopback, MBps: []float64{2000}}},
	}
	return &Run{
		Machine:  Machine{CPU: "Test CPU", Cores: 2, Kernel: "6.0", Go: "go1.26", Date: "2026-01-01 00:00 UTC", LoadStart: "1.0", LoadEnd: "2.0", FreePageReporting: true},
		Settings: Settings{Rounds: 3, Duration: 3 * time.Second, MaxBytes: 1 << 30, Warm: 3 << 30, Command: "make bench"},
		Cases:    []Case{prod, cons},
		Latency: []Latency{{Peer: "weir", RecordSize: 1024, Rate: 1000, PeakMBps: 2,
			Rounds: []LatencyRound{{N: 10, P50: time.Millisecond, P99: 3 * time.Millisecond, P999: 9 * time.Millisecond, Received: 950,
				BrokerProduceP99: 500 * time.Microsecond, BrokerFetchP99: 250 * time.Microsecond,
				StallP999: 4 * time.Millisecond, StallMax: 7 * time.Millisecond}}},
			{Peer: "weir", RecordSize: 1024, Rate: 500, PeakMBps: 1, EndToEnd: true,
				Rounds: []LatencyRound{{N: 10, P50: time.Millisecond, P99: 6 * time.Millisecond, P999: 9 * time.Millisecond, Received: 500}}}},
		WriteLatency: &WriteLatency{Chunk: 256 << 10, MBps: 150, Max: []time.Duration{7 * time.Millisecond},
			Rounds: []LatencyRound{{N: 2860, P50: time.Millisecond / 5, P99: 2 * time.Millisecond, P999: 5 * time.Millisecond}}},
		Startup:  &Startup{Partitions: 10000, Topics: 10, Create: time.Minute, ToStarted: 4 * time.Second, ToReady: 12 * time.Second, IdleRSS: 300 << 20},
		Recovery: &Recovery{Bytes: 1 << 30, Rounds: []RecoveryRound{{ToLogsLoaded: time.Second, ToStarted: 3 * time.Second, ToReady: 4 * time.Second}}},
		Notes:    []string{"something failed\nacross lines"},
	}
}

func TestTargets(t *testing.T) {
	got := map[string]Target{}
	for _, tg := range sampleRun().Targets() {
		got[tg.Goal] = tg
	}
	check := func(goal, measured, met string) {
		t.Helper()
		tg, ok := got[goal]
		if !ok {
			t.Fatalf("no target %q", goal)
		}
		if tg.Measured != measured || tg.Met != met {
			t.Errorf("%s: %q %q, want %q %q", goal, tg.Measured, tg.Met, measured, met)
		}
	}
	check("CPU per GB, produce acks=1: at most 0.5x kfake", "0.50x", "met")
	check("CPU per GB, produce acks=-1: at most 0.5x kfake", "—", "not measured")
	// Round ratios 1.5, 1.0, 2.0: median 1.5.
	check("Produce 1 KiB acks=1: at least 1.5x kfake", "1.50x (1.00–2.00)", "met")
	// The NaN round of JetStream drops out: ratios 6 and 7.
	check("Produce 1 KiB acks=1: at least 3x JetStream", "6.50x (6.00–7.00)", "met")
	check("Produce 1 KiB acks=1: at least 0.5 of the loopback limit", "0.60x (0.50–0.70)", "met")
	check("Consume from page cache: at least 2x kfake", "1.60x", "not met")
	check("Consume from page cache: at least 0.6 of the loopback limit", "0.40x", "not met")
	check("p99 end-to-end latency at half of peak (one node): below 5 ms", "3.00 ms", "met")
	check("the same at half of the end-to-end peak (producer, broker and consumer together)", "6.00 ms", "not met")
	check("10,000 partitions on one node: start in under 10 s", "12.0 s", "not met")
	check("10,000 partitions on one node: idle RSS under 1 GiB", "300 MiB", "met")
	check("Recovery after kill -9 holding 1 GiB unflushed: under 5 s", "4.00 s with 1024 MiB", "met")
	check("RF 3 acks=-1 on 3 nodes: at least 0.4x one node acks=1", "—", "not measured")
}

func TestReferences(t *testing.T) {
	got := map[string]Target{}
	for _, tg := range sampleRun().References() {
		got[tg.Goal] = tg
	}
	for goal, want := range map[string]string{
		"Consume as a fraction of the client bound (the cores / the consumer's own CPU per GB)": "0.80x",
		"Consume: the client bound as a multiple of kfake (the most any broker could reach)":    "2.00x",
		"Consume: the client bound as a fraction of the loopback limit":                         "0.50x",
		"Consume: the one-core client bound as a multiple of kfake":                             "1.00x",
		"CPU per GB, produce acks=1: the store floor (receive, CRC-32C and page-cache append of the same bytes on one thread, no protocol) as a multiple of kfake's (the 0.5x target is out of reach for any broker that copies into the page cache if this is above 0.5x)": "0.75x",
		"CPU per GB, produce acks=1: weir as a multiple of the store floor":                                                         "0.67x",
		"CPU per GB, produce acks=-1: weir as a multiple of the store floor":                                                        "—",
		"Produce 1 KiB acks=1: the client limit as a fraction of the loopback limit (the most any broker reaches with this client)": "—",
	} {
		if tg := got[goal]; tg.Measured != want {
			t.Errorf("%s: %q (%s), want %q", goal, tg.Measured, tg.Met, want)
		}
	}
}

func TestRender(t *testing.T) {
	page := Render(sampleRun(), []Chart{{File: "benchmarks/produce.png", Caption: "Produce"}})
	for _, want := range []string{
		"| CPU | Test CPU, 2 cores |",
		"| Load average at start / end | 1.0 / 2.0 |",
		"| Free page reporting (virtio-balloon) | on |",
		"| Before each produce run | 3072 MiB of memory touched and freed |",
		"| Case | weir MB/s | kfake MB/s | JetStream MB/s | weir / kfake | weir / JetStream | loopback TCP MB/s | weir / loopback TCP | store floor MB/s | weir / store floor |",
		"| 1 KiB · 8 part · 1 prod · acks=1 | 600 (500–700) | 400 (350–500) | 100 | 1.50x (1.00–2.00) | 6.50x (6.00–7.00) | 1000 | 0.60x (0.50–0.70) | 900 | 0.67x (0.56–0.78) |",
		"| weir mean batch KiB | clients' CPU s/GB (weir) | client bound MB/s | store floor CPU s/GB | weir / store floor CPU |",
		"| 1 KiB · 8 part · 1 prod · acks=1 | 1.00 | 2.00 | 5.00 | 0.50x | 0.20x | 1024 | — | — | 1.50 | 0.67x |",
		"| 1 KiB · 8 part | 800 | 500 | 1.60x | 2000 | 0.40x |",
		"| 1 KiB · 8 part | 0.20 | 0.50 | 0.40x | 2.00 | 1000 |",
		"| 256 KiB | 0.20 | 2.00 | 5.00 | 7.00 | 2860 |",
		"| weir | 1000 (1.02) | 2.00 | 950 | 1.00 | 3.00 | 9.00 | 0.50 | 0.25 | 4.00 | 7.00 | 10 |",
		"| weir | 500 (0.51) | 1.00 (e2e) | 500 | 1.00 | 6.00 | 9.00 | — | — | — | — | 10 |",
		"- something failed across lines",
		"![Produce](benchmarks/produce.png)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "NaN") {
		t.Error("page prints NaN")
	}
	if i := strings.Index(page, "%!"); i >= 0 {
		t.Errorf("page has a formatting error: %q", page[max(0, i-40):min(len(page), i+40)])
	}
	for _, absent := range []string{"## Sustained", "## Three nodes", "## Produce with fsync"} {
		if strings.Contains(page, absent) {
			t.Errorf("page has section %q of a case not run", absent)
		}
	}
}

func TestSaveLoadKeepsNaN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	r := sampleRun()
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	js := back.Cases[0].Peers[2]
	if len(js.MBps) != 3 || !math.IsNaN(js.MBps[1]) || js.MBps[0] != 100 {
		t.Errorf("JetStream series after load: %v", js.MBps)
	}
	if Render(back, nil) != Render(r, nil) {
		t.Error("a loaded run renders differently")
	}
}

func TestChartsDrawn(t *testing.T) {
	dir := t.TempDir()
	charts, err := Charts(sampleRun(), dir, "benchmarks")
	if err != nil {
		t.Fatal(err)
	}
	// produce, produce CPU, consume, consume CPU, latency; no sustained run.
	if len(charts) != 5 {
		t.Fatalf("%d charts: %v", len(charts), charts)
	}
	for _, c := range charts {
		fi, err := os.Stat(filepath.Join(dir, filepath.Base(c.File)))
		if err != nil || fi.Size() == 0 {
			t.Errorf("chart %s: %v", c.File, err)
		}
	}
}

// A run with the minimal client's cases reads each throughput and CPU
// target a second time from them, right below the franz-go reading, and
// renders their sections; a target whose minimal case is not in the run
// has no such row.
func TestMinimalClientTargets(t *testing.T) {
	r := sampleRun()
	if n := countGoal(r.Targets(), "the same with the minimal client"); n != 0 {
		t.Fatalf("%d minimal-client rows without its cases", n)
	}
	r.Cases = append(r.Cases,
		Case{ID: CaseID(ProduceMinimal, 1024, 8, 1, 1), Kind: ProduceMinimal, RecordSize: 1024, Partitions: 8, Producers: 1, Acks: 1,
			Peers: []Series{
				{Name: "weir", MBps: []float64{1200}, CPUPerGB: []float64{0.4}, ClientCPUPerGB: []float64{0.4}, Batch: []float64{1 << 20}},
				{Name: "kfake", MBps: []float64{400}, CPUPerGB: []float64{2}},
			},
			Limits: []Series{{Name: LimitLoopback, MBps: []float64{2000}}}},
		Case{ID: CaseID(ConsumeMinimal, 1024, 8, 1, 1), Kind: ConsumeMinimal, RecordSize: 1024, Partitions: 8, Producers: 1, Acks: 1,
			Peers: []Series{
				{Name: "weir", MBps: []float64{1500}, CPUPerGB: []float64{0.3}, ClientCPUPerGB: []float64{0.5}},
				{Name: "kfake", MBps: []float64{500}, CPUPerGB: []float64{1}},
			},
			Limits: []Series{{Name: LimitLoopback, MBps: []float64{2000}}}})
	ts := r.Targets()
	after := func(goal string) Target {
		t.Helper()
		for i, tg := range ts {
			if tg.Goal == goal && i+1 < len(ts) {
				return ts[i+1]
			}
		}
		t.Fatalf("no target %q", goal)
		return Target{}
	}
	for goal, want := range map[string]Target{
		"CPU per GB, produce acks=1: at most 0.5x kfake":              {Measured: "0.20x", Met: "met"},
		"CPU per GB, consume: at most 0.5x kfake":                     {Measured: "0.30x", Met: "met"},
		"Produce 1 KiB acks=1: at least 1.5x kfake":                   {Measured: "3.00x", Met: "met"},
		"Produce 1 KiB acks=1: at least 0.5 of the loopback limit":    {Measured: "0.60x", Met: "met"},
		"Consume from page cache: at least 2x kfake":                  {Measured: "3.00x", Met: "met"},
		"Consume from page cache: at least 0.6 of the loopback limit": {Measured: "0.75x", Met: "met"},
	} {
		got := after(goal)
		if got.Goal != "the same with the minimal client" || got.Measured != want.Measured || got.Met != want.Met {
			t.Errorf("after %q: %q %q %q, want the minimal client's %q %q", goal, got.Goal, got.Measured, got.Met, want.Measured, want.Met)
		}
	}
	// None for JetStream, nor for acks=-1, whose case is not in the run.
	if n := countGoal(ts, "the same with the minimal client"); n != 6 {
		t.Errorf("%d minimal-client rows, want 6", n)
	}
	page := Render(r, nil)
	for _, want := range []string{
		"## Produce with the minimal client",
		"| 1 KiB · 8 part · 1 prod · acks=1 | 1200 | 400 | 3.00x | 2000 | 0.60x |",
		"## Consume with the minimal client",
		"| 1 KiB · 8 part | 0.30 | 1.00 | 0.30x | 0.50 | 4000 |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func countGoal(ts []Target, goal string) int {
	n := 0
	for _, tg := range ts {
		if tg.Goal == goal {
			n++
		}
	}
	return n
}

// Latency rows of the minimal client give their own target rows, right
// after the franz-go ones, and their own label.
func TestMinimalLatencyTargets(t *testing.T) {
	r := sampleRun()
	if n := countGoal(r.Targets(), "the same with the minimal client"); n != 0 {
		t.Fatalf("%d minimal-client rows without its latency rows", n)
	}
	for _, l := range append([]Latency(nil), r.Latency...) {
		l.Minimal = true
		l.Rounds = []LatencyRound{{N: 10, P50: time.Millisecond, P99: 2 * time.Millisecond, P999: 3 * time.Millisecond, Received: 500}}
		if l.EndToEnd {
			l.Rounds[0].P99 = 4 * time.Millisecond
		}
		r.Latency = append(r.Latency, l)
	}
	var got []string
	for _, tg := range r.Targets() {
		if strings.Contains(tg.Goal, "latency") || strings.Contains(tg.Goal, "end-to-end peak") || tg.Goal == "the same with the minimal client" {
			got = append(got, tg.Goal+": "+tg.Measured+" "+tg.Met)
		}
	}
	want := []string{
		"p99 end-to-end latency at half of peak (one node): below 5 ms: 3.00 ms met",
		"the same with the minimal client: 2.00 ms met",
		"the same at half of the end-to-end peak (producer, broker and consumer together): 6.00 ms not met",
		"the same with the minimal client: 4.00 ms met",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("latency targets:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if page := Render(r, nil); !strings.Contains(page, "| weir (minimal client) | 500 (0.51) | 1.00 (e2e) |") {
		t.Errorf("no minimal-client latency row in the page")
	}
}
