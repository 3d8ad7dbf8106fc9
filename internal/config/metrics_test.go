package config

import (
	"strings"
	"testing"
)

func TestMetricsListener(t *testing.T) {
	b, _, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.MetricsListener != "" || b.MetricsAddr() != "" || b.MetricsPprofEnable || b.MetricsPartitionLevelEnable {
		t.Fatalf("metrics must be off by default: %+v", b.MetricsListener)
	}
	b, _, err = Load("", []string{"metrics.listener=http://127.0.0.1:9644/", "metrics.pprof.enable=true"})
	if err != nil {
		t.Fatal(err)
	}
	if b.MetricsListener != "http://127.0.0.1:9644" || b.MetricsAddr() != "127.0.0.1:9644" || !b.MetricsPprofEnable {
		t.Fatalf("got %q %q %v", b.MetricsListener, b.MetricsAddr(), b.MetricsPprofEnable)
	}
	for _, bad := range []string{"127.0.0.1:9644", "https://127.0.0.1:9644", "http://127.0.0.1", "http://127.0.0.1:9644/metrics", "http://u@127.0.0.1:1"} {
		if _, _, err := Load("", []string{"metrics.listener=" + bad}); err == nil || !strings.Contains(err.Error(), "metrics.listener") {
			t.Errorf("%s: want an error naming metrics.listener, got %v", bad, err)
		}
	}
}
