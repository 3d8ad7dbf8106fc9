package verify

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
)

// TestHTMLReport renders a history with a fault and an anomaly: the page
// has both plots (each well-formed SVG) with the fault window shaded,
// the anomaly marked, and the tables.
func TestHTMLReport(t *testing.T) {
	h := newHist()
	h.sent("p1", 0, 0, 0).sent("p1", 1, 0, 1).sent("p1", 2, 0, 2)
	h.add(Op{F: FFault, Type: TStart, Proc: "nemesis", Fault: FaultKill, Node: 2, Detail: "kill -9 of the <leader>"})
	h.sent("p1", 3, 0, 3)
	h.add(Op{F: FFault, Type: TEnd, Proc: "nemesis", Fault: FaultKill, Node: 2, Detail: "restarted"})
	h.sent("p1", 4, 1, 0)
	h.poll("final", rec(0, 0, "p1", 0), rec(0, 2, "p1", 2), rec(0, 3, "p1", 3), rec(1, 0, "p1", 4))
	res := Check(h.ops)
	if res.OK() {
		t.Fatal("the history has a lost write")
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, res); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	if len(svgs) != 2 {
		t.Fatalf("%d plots, want 2", len(svgs))
	}
	for i, svg := range svgs {
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := dec.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("plot %d is not well-formed: %v", i, err)
				}
				break
			}
		}
		for _, want := range []string{`class="fault"`, `class="series"`, `class="anomaly"`, faultColor(FaultKill)} {
			if !strings.Contains(svg, want) {
				t.Errorf("plot %d lacks %s", i, want)
			}
		}
	}
	for _, want := range []string{"1 safety violations", "Availability by fault", "kill -9 of the &lt;leader&gt;", `class="nz"`, "lost"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<leader>") {
		t.Error("a detail reached the page unescaped")
	}
}

// TestReportsNameMinInsync: a run at another min.insync.replicas says so
// in the summary and on the page, since its availability reads
// differently (acks=all sends wait through every fault at 3).
func TestReportsNameMinInsync(t *testing.T) {
	h := newHist()
	h.ops[0].Meta.MinInsync = 3
	h.sent("p1", 0, 0, 0)
	h.poll("final", rec(0, 0, "p1", 0))
	res := Check(h.ops)
	var text, page bytes.Buffer
	WriteSummary(&text, res)
	if err := WriteHTML(&page, res); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"summary": text.String(), "page": page.String()} {
		if !strings.Contains(out, "min.insync.replicas 3") {
			t.Errorf("the %s does not name min.insync.replicas 3:\n%s", name, out)
		}
	}
}
