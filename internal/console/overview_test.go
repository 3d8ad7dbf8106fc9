package console

import (
	"bytes"
	"html/template"
	"strings"
	"testing"
)

// renderOverview executes the overview page with d, as the handler does.
func renderOverview(t *testing.T, d overviewData) string {
	t.Helper()
	s := &Server{pages: map[string]*template.Template{}}
	if err := s.parseTemplates(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.pages["overview"].Execute(&buf, page{Title: "Overview", Nav: "overview", Data: d}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Without DescribeCluster the fenced column says it does not know, and
// the page says why; with it, a fenced broker is marked; without traffic
// counters there is no graph.
func TestOverviewFencedColumn(t *testing.T) {
	unknown := renderOverview(t, overviewData{Brokers: []brokerRow{{ID: 1}}, FencedErr: "DescribeCluster: UNSUPPORTED_VERSION"})
	if !strings.Contains(unknown, `<td class="fenced"><span class="dim">?</span></td>`) || !strings.Contains(unknown, `id="fenced-unknown"`) || !strings.Contains(unknown, "UNSUPPORTED_VERSION") {
		t.Errorf("fenced state unknown:\n%s", unknown)
	}
	known := renderOverview(t, overviewData{Brokers: []brokerRow{{ID: 1}, {ID: 2, Fenced: true}}, FencedKnown: true, Fenced: 1})
	if !strings.Contains(known, `<td class="fenced">no</td>`) || !strings.Contains(known, `<span class="tag bad">fenced</span>`) || !strings.Contains(known, `id="n-fenced">1<`) {
		t.Errorf("broker 2 fenced:\n%s", known)
	}
	if strings.Contains(known, "fenced-unknown") || strings.Contains(known, `id="throughput"`) {
		t.Errorf("a note or graph that should not be there:\n%s", known)
	}
}
