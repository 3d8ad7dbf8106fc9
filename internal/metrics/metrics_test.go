package metrics

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/weir-project/weir/internal/server"
)

func TestStateGaugesAreComputedAtScrape(t *testing.T) {
	st := State{
		Partitions: []Partition{
			{Topic: "a", Partition: 0, Leader: true, Replicas: 3, ISR: 1, MinISR: 2, Size: 100, Segments: 1, Producers: 2},
			{Topic: "a", Partition: 1, Leader: true, Replicas: 3, ISR: 3, MinISR: 2, Size: 50, Segments: 2},
			{Topic: "b", Partition: 0, Leader: false, Replicas: 3, ISR: 1, MinISR: 2, Unwritable: true},
		},
		ActiveController: true, OfflinePartitions: 4, ActiveBrokers: 2, FencedBrokers: 1,
		Connections:        map[string]int{"PLAINTEXT": 2},
		ConnectionsCreated: map[string]int64{"PLAINTEXT": 9},
		MemoryPoolUsed:     10, MemoryPoolBudget: 100,
		WaitingProduces: 3, WaitingFetches: 5,
		Lags:        []Lag{{Group: "g", Topic: "a", Partition: 0, Lag: 7}},
		GroupStates: map[string]int{"Stable": 1},
	}
	m := New(Options{State: func() State { return st }, PartitionLevel: true})
	want := `
# HELP kafka_server_replicamanager_underreplicatedpartitions Partitions led here whose ISR is smaller than their replica set (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions).
# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge
kafka_server_replicamanager_underreplicatedpartitions 1
# HELP kafka_server_replicamanager_underminisrpartitioncount Partitions led here whose ISR is smaller than min.insync.replicas (kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount).
# TYPE kafka_server_replicamanager_underminisrpartitioncount gauge
kafka_server_replicamanager_underminisrpartitioncount 1
# HELP kafka_server_replicamanager_leadercount Partitions led here (kafka.server:type=ReplicaManager,name=LeaderCount).
# TYPE kafka_server_replicamanager_leadercount gauge
kafka_server_replicamanager_leadercount 2
# HELP kafka_server_replicamanager_partitioncount Replicas hosted here (kafka.server:type=ReplicaManager,name=PartitionCount).
# TYPE kafka_server_replicamanager_partitioncount gauge
kafka_server_replicamanager_partitioncount 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"kafka_server_replicamanager_underreplicatedpartitions", "kafka_server_replicamanager_underminisrpartitioncount",
		"kafka_server_replicamanager_leadercount", "kafka_server_replicamanager_partitioncount"); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, m)
	check := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if got, ok := value(fams, name, labels); !ok || got != want {
			t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
		}
	}
	check("kafka_controller_kafkacontroller_activecontrollercount", nil, 1)
	check("kafka_controller_kafkacontroller_offlinepartitionscount", nil, 4)
	check("kafka_server_socket_server_metrics_connection_count", map[string]string{"listener": "PLAINTEXT"}, 2)
	check("kafka_consumergroup_lag", map[string]string{"group": "g", "topic": "a", "partition": "0"}, 7)
	check("kafka_coordinator_group_groupmetadatamanager_numgroups", map[string]string{"state": "Stable"}, 1)
	check("kafka_log_log_size", map[string]string{"topic": "a", "partition": "1"}, 50)
	check("kafka_log_log_numlogsegments", map[string]string{"topic": "a", "partition": "1"}, 2)
	check("kafka_server_replicamanager_produceridcount", nil, 2)
	check("weir_log_unwritable_partitions", nil, 1)
	check("kafka_controller_kafkacontroller_activebrokercount", nil, 2)
	check("kafka_controller_kafkacontroller_fencedbrokercount", nil, 1)
	check("kafka_server_socket_server_metrics_connection_creation_total", map[string]string{"listener": "PLAINTEXT"}, 9)
	check("kafka_network_socketserver_memorypoolused", nil, 10)
	check("kafka_network_socketserver_memorypoolavailable", nil, 90)
	check("kafka_server_delayedoperationpurgatory_purgatorysize", map[string]string{"delayedOperation": "Produce"}, 3)
	check("kafka_server_delayedoperationpurgatory_purgatorysize", map[string]string{"delayedOperation": "Fetch"}, 5)

	// The state changes, and so does the next scrape: nothing is kept.
	st.Partitions = st.Partitions[:1]
	st.ActiveController = false
	fams = gather(t, m)
	check("kafka_server_replicamanager_partitioncount", nil, 1)
	check("kafka_controller_kafkacontroller_offlinepartitionscount", nil, 0)
	check("kafka_controller_kafkacontroller_fencedbrokercount", nil, 0)
	if _, ok := value(fams, "kafka_log_log_size", map[string]string{"topic": "a", "partition": "1"}); ok {
		t.Error("a partition no longer hosted still has a series")
	}
}

func TestPartitionLevelOff(t *testing.T) {
	m := New(Options{State: func() State {
		return State{Partitions: []Partition{{Topic: "a", Size: 1, Segments: 1}}}
	}})
	if _, ok := value(gather(t, m), "kafka_log_log_size", map[string]string{"topic": "a", "partition": "0"}); ok {
		t.Fatal("per-partition series exported with metrics.partition.level.enable=false")
	}
}

func TestEventCounters(t *testing.T) {
	m := New(Options{})
	times := server.RequestTimes{Local: 200 * time.Microsecond, Remote: 799 * time.Microsecond, Send: time.Microsecond, Total: time.Millisecond}
	m.RequestDone(server.Answered{APIKey: 0, APIVersion: 9, RequestBytes: 100, Times: times})
	m.RequestDone(server.Answered{APIKey: 0, APIVersion: 9, RequestBytes: 100, Times: times})
	m.RequestDone(server.Answered{APIKey: 1, APIVersion: 12, RequestBytes: 50, Times: times})
	m.Produced("t", 120, 3)
	m.Fetched("t", 80)
	m.ISRChanged(3, 2)
	m.ISRChanged(2, 3)
	m.ISRChanged(2, 3)
	if v := testutil.ToFloat64(m.requests.WithLabelValues("Produce", "9")); v != 2 {
		t.Errorf("Produce v9 requests %v", v)
	}
	if v := testutil.ToFloat64(m.requests.WithLabelValues("Fetch", "12")); v != 1 {
		t.Errorf("Fetch v12 requests %v", v)
	}
	if v := testutil.ToFloat64(m.bytesIn.WithLabelValues("t")); v != 120 {
		t.Errorf("bytes in %v", v)
	}
	if v := testutil.ToFloat64(m.messagesIn.WithLabelValues("t")); v != 3 {
		t.Errorf("messages in %v", v)
	}
	if v := testutil.ToFloat64(m.bytesOut.WithLabelValues("t")); v != 80 {
		t.Errorf("bytes out %v", v)
	}
	if testutil.ToFloat64(m.isrShrinks) != 1 || testutil.ToFloat64(m.isrExpands) != 2 {
		t.Errorf("isr shrinks %v expands %v", testutil.ToFloat64(m.isrShrinks), testutil.ToFloat64(m.isrExpands))
	}
	for _, h := range []*prometheus.HistogramVec{m.totalTime, m.queueTime, m.localTime, m.remoteTime, m.sendTime, m.reqBytes} {
		if n := testutil.CollectAndCount(h); n != 2 {
			t.Errorf("%d histograms, want one per API", n)
		}
	}
}

// TestRequestTimeParts: each request's times land in their own
// histograms, whose sums add up to the total's.
func TestRequestTimeParts(t *testing.T) {
	m := New(Options{})
	parts := []server.RequestTimes{
		{Queue: 1 * time.Millisecond, Local: 2 * time.Millisecond, Remote: 0, Send: 3 * time.Millisecond},
		{Queue: 0, Local: time.Millisecond, Remote: 500 * time.Millisecond, Send: time.Millisecond},
	}
	for _, p := range parts {
		p.Total = p.Queue + p.Local + p.Remote + p.Send
		m.RequestDone(server.Answered{APIKey: 0, APIVersion: 9, RequestBytes: 10, Times: p})
	}
	fams := gather(t, m)
	sum := func(name string) (float64, uint64) {
		t.Helper()
		h := histogram(t, fams, name, map[string]string{"request": "Produce"})
		return h.GetSampleSum(), h.GetSampleCount()
	}
	want := map[string]float64{
		"kafka_network_requestmetrics_requestqueuetime_seconds": .001,
		"kafka_network_requestmetrics_localtime_seconds":        .003,
		"kafka_network_requestmetrics_remotetime_seconds":       .5,
		"kafka_network_requestmetrics_responsesendtime_seconds": .004,
		"kafka_network_requestmetrics_totaltime_seconds":        .508,
	}
	for name, w := range want {
		if got, n := sum(name); n != 2 || math.Abs(got-w) > 1e-9 {
			t.Errorf("%s: sum %v over %d requests, want %v over 2", name, got, n, w)
		}
	}
	// The 500 ms wait is in the remote histogram's bucket above 250 ms.
	h := histogram(t, fams, "kafka_network_requestmetrics_remotetime_seconds", map[string]string{"request": "Produce"})
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == .25 && b.GetCumulativeCount() != 1 || b.GetUpperBound() == .5 && b.GetCumulativeCount() != 2 {
			t.Errorf("remote time bucket le=%v holds %d", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}

// TestReplicationAndFlushInstruments: follower bytes in and out are
// counted apart from producers' and consumers', and flushes are timed.
func TestReplicationAndFlushInstruments(t *testing.T) {
	m := New(Options{})
	m.Produced("t", 100, 1)
	m.Fetched("t", 30)
	m.ReplicatedIn("t", 70)
	m.ReplicatedIn("u", 5)
	m.ReplicatedOut("t", 40)
	m.LogFlushed(2 * time.Millisecond)
	m.LogFlushed(3 * time.Millisecond)
	fams := gather(t, m)
	check := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if got, ok := value(fams, name, labels); !ok || got != want {
			t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
		}
	}
	check("kafka_server_brokertopicmetrics_replicationbytesin_total", map[string]string{"topic": "t"}, 70)
	check("kafka_server_brokertopicmetrics_replicationbytesin_total", map[string]string{"topic": "u"}, 5)
	check("kafka_server_brokertopicmetrics_replicationbytesout_total", map[string]string{"topic": "t"}, 40)
	check("kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": "t"}, 100)
	check("kafka_server_brokertopicmetrics_bytesout_total", map[string]string{"topic": "t"}, 30)
	h := histogram(t, fams, "kafka_log_logflushstats_logflushrateandtime_seconds", nil)
	if h.GetSampleCount() != 2 || math.Abs(h.GetSampleSum()-.005) > 1e-9 {
		t.Errorf("log flushes: %d, %v s; want 2, 0.005 s", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, name := range []string{"kafka_server_brokertopicmetrics_replicationbytesin_total", "kafka_server_brokertopicmetrics_replicationbytesout_total", "kafka_log_logflushstats_logflushrateandtime_seconds"} {
		if help := fams[name].GetHelp(); !strings.Contains(help, "kafka.") {
			t.Errorf("%s: help %q names no Kafka MBean", name, help)
		}
	}
}

// TestLogLoadGauges: the start-up load's figures are exported as gauges.
func TestLogLoadGauges(t *testing.T) {
	m := New(Options{State: func() State {
		return State{LogLoad: LogLoad{Seconds: 1.5, Logs: 7, RecoveredLogs: 2, RecoveredSegments: 3}}
	}})
	fams := gather(t, m)
	for name, want := range map[string]float64{
		"weir_log_recovery_seconds": 1.5, "weir_log_recovery_logs": 7,
		"weir_log_recovery_unflushed_logs": 2, "weir_log_recovery_unflushed_segments": 3,
	} {
		if got, ok := value(fams, name, nil); !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v", name, got, ok, want)
		}
	}
}

func TestHTTPEndpoints(t *testing.T) {
	m := New(Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	readyFn := func() error {
		if !ready.Load() {
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, m.Handler(HandlerOptions{Ready: readyFn})) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base := "http://" + ln.Addr().String()
	status := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status("/healthz"); s != 200 {
		t.Errorf("/healthz %d", s)
	}
	if s := status("/readyz"); s != 503 {
		t.Errorf("/readyz before ready %d", s)
	}
	ready.Store(true)
	if s := status("/readyz"); s != 200 {
		t.Errorf("/readyz once ready %d", s)
	}
	if s := status("/debug/pprof/"); s != 404 {
		t.Errorf("/debug/pprof/ with pprof off: %d", s)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	if fams["go_goroutines"] == nil || fams["process_resident_memory_bytes"] == nil {
		t.Error("Go runtime or process collector missing")
	}
}
