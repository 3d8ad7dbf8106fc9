package metrics_test

import (
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/weir-project/weir/test/harness"
)

// scrape is one parsed /metrics answer, with this package's readings of
// it besides the harness's.
type scrape struct{ harness.Metrics }

var httpClient = &http.Client{Timeout: 30 * time.Second}

// get answers path's status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func scrapeMetrics(t *testing.T, base string) scrape {
	t.Helper()
	return scrape{harness.ScrapeMetrics(t, base)}
}

// logBytes is the size of a partition's segment files on disk: the
// record batches exactly as producers sent them (with offsets and leader
// epoch patched in place), which is what Kafka's BytesIn counts.
func logBytes(t *testing.T, dir, topic string, partition int) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, topic+"-"+strconv.Itoa(partition), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// requestTimes are one API's request time histograms, summed, as one
// scrape saw them.
type requestTimes struct {
	count                             float64 // observations of the total time
	counts                            []float64
	total, queue, local, remote, send float64
}

// Kafka's request time parts, in the order of requestTimes.counts.
var requestTimeSeries = []string{
	"kafka_network_requestmetrics_totaltime_seconds",
	"kafka_network_requestmetrics_requestqueuetime_seconds",
	"kafka_network_requestmetrics_localtime_seconds",
	"kafka_network_requestmetrics_remotetime_seconds",
	"kafka_network_requestmetrics_responsesendtime_seconds",
}

func (s scrape) requestTimes(api string) requestTimes {
	var rt requestTimes
	sums := make([]float64, len(requestTimeSeries))
	for i, name := range requestTimeSeries {
		c, sum := s.Histogram(name, map[string]string{"request": api})
		rt.counts = append(rt.counts, c)
		sums[i] = sum
	}
	rt.count = rt.counts[0]
	rt.total, rt.queue, rt.local, rt.remote, rt.send = sums[0], sums[1], sums[2], sums[3], sums[4]
	return rt
}

// settled says every part was observed count times: no request of the
// API is half counted.
func (rt requestTimes) settled(count float64) bool {
	for _, c := range rt.counts {
		if c != count {
			return false
		}
	}
	return true
}

// minus is rt less an earlier scrape's.
func (rt requestTimes) minus(o requestTimes) requestTimes {
	d := requestTimes{count: rt.count - o.count, total: rt.total - o.total, queue: rt.queue - o.queue,
		local: rt.local - o.local, remote: rt.remote - o.remote, send: rt.send - o.send}
	for i := range rt.counts {
		d.counts = append(d.counts, rt.counts[i]-o.counts[i])
	}
	return d
}

// checkAddsUp fails the test unless queue + local + remote + send equals
// the total (to float rounding): the server splits each request's time
// from the same four instants.
func checkAddsUp(t *testing.T, api string, rt requestTimes) {
	t.Helper()
	parts := rt.queue + rt.local + rt.remote + rt.send
	if math.Abs(parts-rt.total) > 1e-6 || rt.local < 0 || rt.remote < 0 {
		t.Errorf("%s: queue %v + local %v + remote %v + send %v = %v, total %v",
			api, rt.queue, rt.local, rt.remote, rt.send, parts, rt.total)
	}
}
