package harness

import (
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one parsed /metrics answer of a broker, by family name.
type Metrics map[string]*dto.MetricFamily

// metricsClient bounds a scrape: a broker that stopped answering fails
// the test rather than hanging it.
var metricsClient = &http.Client{Timeout: 30 * time.Second}

// ScrapeMetrics fetches base/metrics (base is a Broker.MetricsURL) and
// parses it with Prometheus' own text parser: anything it rejects fails
// the test.
func ScrapeMetrics(t testing.TB, base string) Metrics {
	t.Helper()
	resp, err := metricsClient.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// Value is the value of the counter or gauge name{labels} (exactly those
// labels), 0 when absent: a counter not yet moved has no series.
func (s Metrics) Value(name string, labels map[string]string) float64 {
	for _, m := range s[name].GetMetric() {
		if len(m.GetLabel()) == len(labels) && hasLabels(m, labels) {
			return scalar(m)
		}
	}
	return 0
}

// Sum adds the series of name whose labels include match; a histogram
// adds its sample count.
func (s Metrics) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, m := range s[name].GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		if m.Histogram != nil {
			total += float64(m.GetHistogram().GetSampleCount())
			continue
		}
		total += scalar(m)
	}
	return total
}

// Histogram adds up the sample counts and sums of the histograms of name
// whose labels include match.
func (s Metrics) Histogram(name string, match map[string]string) (count, sum float64) {
	for _, m := range s[name].GetMetric() {
		if m.Histogram == nil || !hasLabels(m, match) {
			continue
		}
		count += float64(m.GetHistogram().GetSampleCount())
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

// hasLabels says m carries every label of match with its value.
func hasLabels(m *dto.Metric, match map[string]string) bool {
	have := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range match {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// scalar is a counter's or a gauge's value.
func scalar(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	return 0
}
