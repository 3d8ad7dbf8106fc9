package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// State is the broker's state as the gauges read it at scrape time.
type State struct {
	// Partitions are the replicas hosted here.
	Partitions []Partition
	// ActiveController says this node is the active controller; the
	// cluster-wide counts below are exported by it alone, as in Kafka.
	ActiveController  bool
	OfflinePartitions int
	ActiveBrokers     int // registered and unfenced
	FencedBrokers     int
	// Connections are the open connections by listener, and
	// ConnectionsCreated those admitted since start.
	Connections        map[string]int
	ConnectionsCreated map[string]int64
	// MemoryPoolUsed is the request memory in flight, MemoryPoolBudget
	// queued.max.request.bytes (-1: unbounded).
	MemoryPoolUsed, MemoryPoolBudget int64
	// WaitingProduces and WaitingFetches are the requests waiting for
	// acks or for data (Kafka's purgatories).
	WaitingProduces, WaitingFetches int64
	// Lags are the consumer lags of the groups this node coordinates,
	// for the partitions it leads.
	Lags []Lag
	// GroupStates counts the coordinated groups by state.
	GroupStates map[string]int
	// LogLoad is what loading the logs at start took.
	LogLoad LogLoad
}

// LogLoad describes the load of the logs at start: how long it took, how
// many logs it loaded, and how many of them (and of their segments) it
// recovered because they were not flushed (after a crash).
type LogLoad struct {
	Seconds                          float64
	Logs                             int
	RecoveredLogs, RecoveredSegments int
}

// Partition is one hosted replica.
type Partition struct {
	Topic     string
	Partition int32
	Leader    bool // led here
	Replicas  int
	ISR       int
	MinISR    int
	Size      int64 // log bytes
	Segments  int
	Producers int // producer ids with state (idempotence)
	// Unwritable: the log's last write failed and nothing has shown it
	// can take writes since (a full disk, a failed write or fsync).
	Unwritable bool
}

// Lag is one group's lag on one partition: end offset minus committed.
type Lag struct {
	Group     string
	Topic     string
	Partition int32
	Lag       int64
}

// stateCollector computes gauges from State at every scrape.
type stateCollector struct {
	read           func() State
	partitionLevel bool

	underReplicated, underMinISR, leaders, partitions   *prometheus.Desc
	activeController, offline                           *prometheus.Desc
	connections, lag, groups                            *prometheus.Desc
	logSize, logSegments                                *prometheus.Desc
	activeBrokers, fencedBrokers, created, producers    *prometheus.Desc
	poolUsed, poolAvailable, purgatory                  *prometheus.Desc
	loadSeconds, loadLogs, recoveredLogs, recoveredSegs *prometheus.Desc
	unwritable                                          *prometheus.Desc
}

func newStateCollector(read func() State, partitionLevel bool) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &stateCollector{
		read: read, partitionLevel: partitionLevel,
		underReplicated: d("kafka_server_replicamanager_underreplicatedpartitions",
			"Partitions led here whose ISR is smaller than their replica set (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions)."),
		underMinISR: d("kafka_server_replicamanager_underminisrpartitioncount",
			"Partitions led here whose ISR is smaller than min.insync.replicas (kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount)."),
		leaders: d("kafka_server_replicamanager_leadercount",
			"Partitions led here (kafka.server:type=ReplicaManager,name=LeaderCount)."),
		partitions: d("kafka_server_replicamanager_partitioncount",
			"Replicas hosted here (kafka.server:type=ReplicaManager,name=PartitionCount)."),
		activeController: d("kafka_controller_kafkacontroller_activecontrollercount",
			"1 on the active controller, else 0 (kafka.controller:type=KafkaController,name=ActiveControllerCount)."),
		offline: d("kafka_controller_kafkacontroller_offlinepartitionscount",
			"Partitions without a leader, exported by the active controller (kafka.controller:type=KafkaController,name=OfflinePartitionsCount)."),
		connections: d("kafka_server_socket_server_metrics_connection_count",
			"Open client connections per listener (kafka.server:type=socket-server-metrics,listener=*, connection-count).", "listener"),
		lag: d("kafka_consumergroup_lag",
			"End offset minus committed offset, per group and partition, for the groups coordinated here on partitions led here.", "group", "topic", "partition"),
		groups: d("kafka_coordinator_group_groupmetadatamanager_numgroups",
			"Groups coordinated here, by state (kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups*).", "state"),
		logSize: d("kafka_log_log_size",
			"Bytes of a partition's log (kafka.log:type=Log,name=Size).", "topic", "partition"),
		logSegments: d("kafka_log_log_numlogsegments",
			"Segments of a partition's log (kafka.log:type=Log,name=NumLogSegments).", "topic", "partition"),
		activeBrokers: d("kafka_controller_kafkacontroller_activebrokercount",
			"Registered unfenced brokers, exported by the active controller (kafka.controller:type=KafkaController,name=ActiveBrokerCount)."),
		fencedBrokers: d("kafka_controller_kafkacontroller_fencedbrokercount",
			"Registered fenced brokers, exported by the active controller (kafka.controller:type=KafkaController,name=FencedBrokerCount)."),
		created: d("kafka_server_socket_server_metrics_connection_creation_total",
			"Connections accepted per listener (kafka.server:type=socket-server-metrics,listener=*, connection-creation-total).", "listener"),
		producers: d("kafka_server_replicamanager_produceridcount",
			"Producer ids with idempotence state in the replicas hosted here (kafka.server:type=ReplicaManager,name=ProducerIdCount)."),
		poolUsed: d("kafka_network_socketserver_memorypoolused",
			"Request memory in flight, charged to queued.max.request.bytes (kafka.network:type=SocketServer,name=MemoryPoolUsed)."),
		poolAvailable: d("kafka_network_socketserver_memorypoolavailable",
			"queued.max.request.bytes left; absent when unbounded (kafka.network:type=SocketServer,name=MemoryPoolAvailable)."),
		purgatory: d("kafka_server_delayedoperationpurgatory_purgatorysize",
			"Requests waiting: produces for acks, fetches for data (kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize).", "delayedOperation"),
		loadSeconds: d("weir_log_recovery_seconds",
			"Seconds loading the logs took at start, recovery of unflushed segments included (no Kafka MBean; Kafka logs it as \"Loaded N logs in Xms\")."),
		loadLogs: d("weir_log_recovery_logs",
			"Logs loaded at start."),
		recoveredLogs: d("weir_log_recovery_unflushed_logs",
			"Logs with unflushed segments recovered at start: 0 after a clean shutdown (what kafka.log:type=LogManager,name=remainingLogsToRecover counted down from)."),
		recoveredSegs: d("weir_log_recovery_unflushed_segments",
			"Unflushed segments rescanned at start (what kafka.log:type=LogManager,name=remainingSegmentsToRecover counted down from)."),
		unwritable: d("weir_log_unwritable_partitions",
			"Replicas hosted here whose log cannot take writes now: a full disk (until there is room again) or a failed write or fsync (until restart). Meanwhile they hand their leaderships over and leave the ISRs wherever another in-sync replica can take their place. Kafka would count the log dir in kafka.log:type=LogManager,name=OfflineLogDirectoryCount."),
	}
}

// Describe sends every descriptor (prometheus.Collector).
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.underReplicated, c.underMinISR, c.leaders, c.partitions,
		c.activeController, c.offline, c.connections, c.lag, c.groups, c.logSize, c.logSegments,
		c.activeBrokers, c.fencedBrokers, c.created, c.producers, c.poolUsed, c.poolAvailable, c.purgatory,
		c.loadSeconds, c.loadLogs, c.recoveredLogs, c.recoveredSegs, c.unwritable} {
		ch <- d
	}
}

// Collect reads the state once and sends the gauges (prometheus.Collector).
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.read()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var under, underMin, leaders, producers, unwritable int
	for _, p := range st.Partitions {
		producers += p.Producers
		if p.Unwritable {
			unwritable++
		}
		if p.Leader {
			leaders++
			if p.ISR < p.Replicas {
				under++
			}
			if p.ISR < p.MinISR {
				underMin++
			}
		}
		if c.partitionLevel {
			part := strconv.Itoa(int(p.Partition))
			gauge(c.logSize, float64(p.Size), p.Topic, part)
			gauge(c.logSegments, float64(p.Segments), p.Topic, part)
		}
	}
	gauge(c.underReplicated, float64(under))
	gauge(c.underMinISR, float64(underMin))
	gauge(c.leaders, float64(leaders))
	gauge(c.partitions, float64(len(st.Partitions)))
	gauge(c.producers, float64(producers))
	gauge(c.unwritable, float64(unwritable))
	active, offline, activeBrokers, fenced := 0.0, 0.0, 0.0, 0.0
	if st.ActiveController {
		active, offline = 1, float64(st.OfflinePartitions)
		activeBrokers, fenced = float64(st.ActiveBrokers), float64(st.FencedBrokers)
	}
	gauge(c.activeController, active)
	gauge(c.offline, offline)
	gauge(c.activeBrokers, activeBrokers)
	gauge(c.fencedBrokers, fenced)
	for l, n := range st.Connections {
		gauge(c.connections, float64(n), l)
	}
	for l, n := range st.ConnectionsCreated {
		ch <- prometheus.MustNewConstMetric(c.created, prometheus.CounterValue, float64(n), l)
	}
	gauge(c.poolUsed, float64(st.MemoryPoolUsed))
	if st.MemoryPoolBudget >= 0 {
		gauge(c.poolAvailable, float64(max(st.MemoryPoolBudget-st.MemoryPoolUsed, 0)))
	}
	gauge(c.purgatory, float64(st.WaitingProduces), "Produce")
	gauge(c.purgatory, float64(st.WaitingFetches), "Fetch")
	gauge(c.loadSeconds, st.LogLoad.Seconds)
	gauge(c.loadLogs, float64(st.LogLoad.Logs))
	gauge(c.recoveredLogs, float64(st.LogLoad.RecoveredLogs))
	gauge(c.recoveredSegs, float64(st.LogLoad.RecoveredSegments))
	for _, l := range st.Lags {
		gauge(c.lag, float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
	}
	for s, n := range st.GroupStates {
		gauge(c.groups, float64(n), s)
	}
}
