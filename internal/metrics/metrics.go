// Package metrics exports the broker's metrics in Prometheus' format,
// named after Kafka's MBeans (see the README's Metrics table), and serves
// them with /healthz, /readyz and optionally /debug/pprof. It keeps its
// own registry: nothing here is global, so two brokers in one process
// (tests) do not share series.
//
// Two kinds of series: counters and histograms moved by the one place
// that sees each event (the server's request dispatch, the produce and
// fetch handlers), through the small observer interfaces their packages
// own; and gauges computed at scrape time from the broker's current state
// (State), so that no bookkeeping can drift from the truth.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/errcode"
	"github.com/weir-project/weir/internal/server"
)

// Options configures the metrics.
type Options struct {
	// State reads the broker's current state at each scrape; nil means
	// no state gauges.
	State func() State
	// PartitionLevel exports per-partition series (log size, segment
	// count): metrics.partition.level.enable.
	PartitionLevel bool
}

// Metrics holds the registry and the event-driven instruments.
type Metrics struct {
	reg *prometheus.Registry

	bytesIn    *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	messagesIn *prometheus.CounterVec
	replIn     *prometheus.CounterVec
	replOut    *prometheus.CounterVec
	logFlush   prometheus.Histogram
	requests   *prometheus.CounterVec
	totalTime  *prometheus.HistogramVec
	queueTime  *prometheus.HistogramVec
	localTime  *prometheus.HistogramVec
	remoteTime *prometheus.HistogramVec
	sendTime   *prometheus.HistogramVec
	reqBytes   *prometheus.HistogramVec
	respBytes  *prometheus.HistogramVec
	errors     *prometheus.CounterVec
	errWalker  errorWalker
	isrShrinks prometheus.Counter
	isrExpands prometheus.Counter
}

// requestTimeBuckets span a fast local answer to a long-polling fetch
// (fetch.max.wait.ms) and a produce waiting for acks up to its timeout.
var requestTimeBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// frameBuckets span request and response frames from a heartbeat's tens
// of bytes to 16 MiB (64 B * 4^9, the last finite bound; larger produces
// and fetches count in +Inf only).
var frameBuckets = prometheus.ExponentialBuckets(64, 4, 10)

// logFlushBuckets span an fsync of a page-cache-warm segment on an SSD
// to a slow disk's seconds.
var logFlushBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// perRequest is a histogram of the RequestMetrics family, labelled by
// the request's name as Kafka's MBeans are.
func perRequest(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"request"})
}

// New builds the registry with the Go runtime and process collectors,
// the event instruments and, if opts.State is set, the state collector.
func New(opts Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesin_total",
		Help: "Record batch bytes appended by producers, per topic (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec).",
	}, []string{"topic"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_bytesout_total",
		Help: "Record batch bytes sent to consumers in fetch responses, per topic (kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec).",
	}, []string{"topic"})
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_messagesin_total",
		Help: "Records appended by producers, per topic (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec).",
	}, []string{"topic"})
	m.replIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_replicationbytesin_total",
		Help: "Record batch bytes a follower here appended from its leaders, per topic (kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec; Kafka's has no topic level).",
	}, []string{"topic"})
	m.replOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_replicationbytesout_total",
		Help: "Record batch bytes sent to followers in fetch responses, per topic; not in bytes out (kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec; Kafka's has no topic level).",
	}, []string{"topic"})
	m.logFlush = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_log_logflushstats_logflushrateandtime_seconds",
		Help:    "Time of each flush of a log: the fsync of its segments from the recovery point on, by log.flush.interval.*, a roll, a checkpoint or a shutdown (kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs).",
		Buckets: logFlushBuckets,
	})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_requests_total",
		Help: "Requests answered, per API and version; a Fetch also as FetchConsumer or FetchFollower (kafka.network:type=RequestMetrics,name=RequestsPerSec).",
	}, []string{"request", "version"})
	m.totalTime = perRequest("kafka_network_requestmetrics_totaltime_seconds",
		"Time from a request read whole to its response written, per API (kafka.network:type=RequestMetrics,name=TotalTimeMs).",
		requestTimeBuckets)
	m.queueTime = perRequest("kafka_network_requestmetrics_requestqueuetime_seconds",
		"Time a request read whole waited behind the ones before it on its connection, per API (kafka.network:type=RequestMetrics,name=RequestQueueTimeMs).",
		requestTimeBuckets)
	m.localTime = perRequest("kafka_network_requestmetrics_localtime_seconds",
		"Time the handler worked on a request, its waits excluded, per API (kafka.network:type=RequestMetrics,name=LocalTimeMs).",
		requestTimeBuckets)
	m.remoteTime = perRequest("kafka_network_requestmetrics_remotetime_seconds",
		"Time the handler waited for other brokers, data or clients (acks=-1, long polls, group commits, joins and syncs, forwarding to the controller), per API (kafka.network:type=RequestMetrics,name=RemoteTimeMs).",
		requestTimeBuckets)
	m.sendTime = perRequest("kafka_network_requestmetrics_responsesendtime_seconds",
		"Time to write a response, per API (kafka.network:type=RequestMetrics,name=ResponseSendTimeMs).",
		requestTimeBuckets)
	m.reqBytes = perRequest("kafka_network_requestmetrics_requestbytes",
		"Request frame sizes in bytes, per API (kafka.network:type=RequestMetrics,name=RequestBytes).",
		frameBuckets)
	m.respBytes = perRequest("kafka_network_requestmetrics_responsebytes",
		"Response frame sizes in bytes, per API, of the responses written (no Kafka MBean; beside RequestBytes).",
		frameBuckets)
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_network_requestmetrics_errors_total",
		Help: "Error codes in responses, NONE included, each top-level, topic and partition code counted, per API and error (kafka.network:type=RequestMetrics,name=ErrorsPerSec).",
	}, []string{"request", "error"})
	m.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrshrinks_total",
		Help: "ISR shrinks committed for partitions led here (kafka.server:type=ReplicaManager,name=IsrShrinksPerSec).",
	})
	m.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrexpands_total",
		Help: "ISR expansions committed for partitions led here (kafka.server:type=ReplicaManager,name=IsrExpandsPerSec).",
	})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.bytesIn, m.bytesOut, m.messagesIn, m.replIn, m.replOut, m.logFlush, m.requests, m.totalTime, m.queueTime,
		m.localTime, m.remoteTime, m.sendTime, m.reqBytes, m.respBytes, m.errors, m.isrShrinks, m.isrExpands,
	)
	if opts.State != nil {
		m.reg.MustRegister(newStateCollector(opts.State, opts.PartitionLevel))
	}
	return m
}

// Registry is the registry the HTTP handler serves (for tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RequestDone counts one answered request (server.RequestObserver):
// under its API's name and, as Kafka counts a Fetch also as
// FetchConsumer or FetchFollower, under the name the handler gave it;
// its error codes under its API's name alone, as Kafka's.
func (m *Metrics) RequestDone(a server.Answered) {
	name := requestName(a.APIKey)
	m.observeRequest(name, a)
	if a.Subname != "" {
		m.observeRequest(a.Subname, a)
	}
	if a.Response != nil {
		m.countErrors(name, a.Response)
	}
}

// observeRequest moves the request series of name by one request.
func (m *Metrics) observeRequest(name string, a server.Answered) {
	t := a.Times
	m.requests.WithLabelValues(name, strconv.Itoa(int(a.APIVersion))).Inc()
	m.totalTime.WithLabelValues(name).Observe(t.Total.Seconds())
	m.queueTime.WithLabelValues(name).Observe(t.Queue.Seconds())
	m.localTime.WithLabelValues(name).Observe(t.Local.Seconds())
	m.remoteTime.WithLabelValues(name).Observe(t.Remote.Seconds())
	m.sendTime.WithLabelValues(name).Observe(t.Send.Seconds())
	m.reqBytes.WithLabelValues(name).Observe(float64(a.RequestBytes))
	if a.ResponseBytes > 0 {
		m.respBytes.WithLabelValues(name).Observe(float64(a.ResponseBytes))
	}
}

// countErrors counts the error codes of resp, by Kafka's error names
// (a bounded set: errcode.Name reads unknown codes as
// UNKNOWN_SERVER_ERROR).
func (m *Metrics) countErrors(name string, resp kmsg.Response) {
	var t tally
	m.errWalker.count(resp, &t)
	t.each(func(code int16, n int) {
		m.errors.WithLabelValues(name, errcode.Name(code)).Add(float64(n))
	})
}

// requestName is Kafka's name of an API, as in its request label.
func requestName(key int16) string {
	if name := kmsg.NameForKey(key); name != "" {
		return name
	}
	return "Unknown" + strconv.Itoa(int(key))
}

// Produced counts the record batches a producer had appended to topic.
func (m *Metrics) Produced(topic string, bytes, records int64) {
	m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.messagesIn.WithLabelValues(topic).Add(float64(records))
}

// Fetched counts record batch bytes sent to a consumer from topic.
func (m *Metrics) Fetched(topic string, bytes int64) {
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
}

// ReplicatedIn counts record batch bytes a follower here appended from
// its leader for topic.
func (m *Metrics) ReplicatedIn(topic string, bytes int64) {
	m.replIn.WithLabelValues(topic).Add(float64(bytes))
}

// ReplicatedOut counts record batch bytes sent to a follower from topic.
func (m *Metrics) ReplicatedOut(topic string, bytes int64) {
	m.replOut.WithLabelValues(topic).Add(float64(bytes))
}

// LogFlushed times one flush of a log (storage.FlushObserver).
func (m *Metrics) LogFlushed(d time.Duration) {
	m.logFlush.Observe(d.Seconds())
}

// ISRChanged counts a committed ISR change of a partition led here.
func (m *Metrics) ISRChanged(before, after int) {
	switch {
	case after < before:
		m.isrShrinks.Inc()
	case after > before:
		m.isrExpands.Inc()
	}
}
