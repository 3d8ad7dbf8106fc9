package config

import (
	"math"
	"strings"
)

// brokerKey describes one broker configuration key: its type, its default
// as DescribeConfigs shows it, how to parse a value into the Broker and
// how to render the current one.
type brokerKey struct {
	name string
	typ  Type
	def  string // default value (ignored when null)
	null bool   // no default: the key is unset unless given
	doc  string
	set  func(b *Broker, raw string) error
	get  func(b *Broker) (value string, ok bool) // ok=false: null
}

// anyInt is the lower bound of a number Kafka does not range-check.
const anyInt = math.MinInt64

func intKey[T ~int16 | ~int32 | ~int64](name string, typ Type, def, lo, hi int64, field func(*Broker) *T, doc string) brokerKey {
	return brokerKey{
		name: name, typ: typ, def: formatInt(def), doc: doc,
		set: func(b *Broker, raw string) error {
			n, err := parseInt(name, raw, typ, lo, hi)
			*field(b) = T(n)
			return err
		},
		get: func(b *Broker) (string, bool) { return formatInt(int64(*field(b))), true },
	}
}

// optIntKey is a number with no default, for a key that only overrides a
// synonym (log.retention.ms over log.retention.hours, ...).
func optIntKey(name string, typ Type, lo int64, field func(*Broker) **int64, doc string) brokerKey {
	return brokerKey{
		name: name, typ: typ, null: true, doc: doc,
		set: func(b *Broker, raw string) error {
			n, err := parseInt(name, raw, typ, lo, noMax)
			*field(b) = &n
			return err
		},
		get: func(b *Broker) (string, bool) {
			if p := *field(b); p != nil {
				return formatInt(*p), true
			}
			return "", false
		},
	}
}

func boolKey(name string, def bool, field func(*Broker) *bool, doc string) brokerKey {
	d := "false"
	if def {
		d = "true"
	}
	return brokerKey{
		name: name, typ: TypeBoolean, def: d, doc: doc,
		set: func(b *Broker, raw string) (err error) {
			*field(b), err = parseBool(name, raw)
			return err
		},
		get: func(b *Broker) (string, bool) {
			if *field(b) {
				return "true", true
			}
			return "false", true
		},
	}
}

// stringKey is free text; with null set, "" renders as null.
func stringKey(name, def string, null bool, field func(*Broker) *string, doc string) brokerKey {
	return brokerKey{
		name: name, typ: TypeString, def: def, null: null, doc: doc,
		set: func(b *Broker, raw string) error {
			*field(b) = strings.TrimSpace(raw)
			return nil
		},
		get: func(b *Broker) (string, bool) { return *field(b), !null || *field(b) != "" },
	}
}

func enumKey(name, def string, allowed []string, field func(*Broker) *string, doc string) brokerKey {
	return brokerKey{
		name: name, typ: TypeString, def: def, doc: doc,
		set: func(b *Broker, raw string) (err error) {
			*field(b), err = parseEnum(name, raw, allowed)
			return err
		},
		get: func(b *Broker) (string, bool) { return *field(b), true },
	}
}

// complexKey is a key whose value needs the other keys to be understood
// (listeners, voters, ...): set only parses, resolve checks and fills in.
func complexKey(name string, typ Type, def string, null bool, set func(*Broker, string) error, get func(*Broker) (string, bool), doc string) brokerKey {
	return brokerKey{name: name, typ: typ, def: def, null: null, doc: doc, set: set, get: get}
}

var (
	timestampTypes   = []string{"CreateTime", "LogAppendTime"}
	cleanupPolicies  = []string{"compact", "delete"}
	compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}
	processRoles     = []string{"broker", "controller"}
)

// brokerKeys is the table of every broker key weir knows, in the order
// they are parsed and documented. It is never modified.
var brokerKeys = []brokerKey{
	// Identity and roles.
	intKey("node.id", TypeInt, 1, 0, math.MaxInt32, func(b *Broker) *int32 { return &b.NodeID },
		"The id of this node, unique in the cluster."),
	complexKey("process.roles", TypeList, "broker,controller", false,
		func(b *Broker, raw string) (err error) {
			b.ProcessRoles, err = parseEnumList("process.roles", raw, processRoles)
			if err == nil && len(b.ProcessRoles) == 0 {
				err = invalid("process.roles", raw, "at least one role is required")
			}
			return err
		},
		func(b *Broker) (string, bool) { return strings.Join(b.ProcessRoles, ","), true },
		"The roles of this node: broker, controller, or both."),
	stringKey("broker.rack", "", true, func(b *Broker) *string { return &b.BrokerRack },
		"Rack of the broker, for rack-aware replica placement."),

	// Network.
	complexKey("listeners", TypeString, "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", false,
		func(b *Broker, raw string) (err error) {
			b.Listeners, err = ParseListeners("listeners", raw, true)
			if err == nil && len(b.Listeners) == 0 {
				err = invalid("listeners", raw, "at least one listener is required")
			}
			return err
		},
		func(b *Broker) (string, bool) { return formatListeners(b.Listeners), true },
		"Listeners to bind, NAME://host:port; an empty host binds every interface, port 0 any free port."),
	complexKey("advertised.listeners", TypeString, "", true,
		func(b *Broker, raw string) (err error) {
			b.AdvertisedListeners, err = ParseListeners("advertised.listeners", raw, false)
			return err
		},
		func(b *Broker) (string, bool) { return formatListeners(b.AdvertisedListeners), true },
		"Addresses given to clients; defaults to listeners minus the controller listeners."),
	complexKey("controller.listener.names", TypeString, "CONTROLLER", false,
		func(b *Broker, raw string) error {
			b.ControllerListenerNames = nil
			for _, n := range parseList(raw) {
				if !validListenerName(n) {
					return invalid("controller.listener.names", raw, "%q is not a listener name", n)
				}
				b.ControllerListenerNames = append(b.ControllerListenerNames, strings.ToUpper(n))
			}
			return nil
		},
		func(b *Broker) (string, bool) { return strings.Join(b.ControllerListenerNames, ","), true },
		"Names of the listeners used by the controller (Raft)."),
	complexKey("listener.security.protocol.map", TypeString, "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", false,
		func(b *Broker, raw string) (err error) {
			b.ProtocolMap, err = parseProtocolMap("listener.security.protocol.map", raw)
			return err
		},
		func(b *Broker) (string, bool) { return formatProtocolMap(b), true },
		"Security protocol of each listener name; weir supports only PLAINTEXT."),
	stringKey("inter.broker.listener.name", "PLAINTEXT", false, func(b *Broker) *string { return &b.InterBrokerListenerName },
		"Listener used between brokers (replication)."),
	complexKey("controller.quorum.voters", TypeList, "", true,
		func(b *Broker, raw string) (err error) {
			b.QuorumVoters, err = parseVoters("controller.quorum.voters", raw)
			return err
		},
		func(b *Broker) (string, bool) { return formatVoters(b.QuorumVoters), true },
		"The first Raft voters, id@host:port,...; defaults to this node on its controller listener. A controller not listed joins as an observer (weir cluster quorum add)."),
	complexKey("console.listener", TypeString, "", true,
		func(b *Broker, raw string) (err error) {
			b.ConsoleListener, err = parseConsoleListener("console.listener", raw)
			return err
		},
		func(b *Broker) (string, bool) { return b.ConsoleListener, b.ConsoleListener != "" },
		"weir only: the web console's address, http://host:port (an empty host binds 127.0.0.1, port 0 any free port). Off unless set; weir serve with no arguments turns it on at http://127.0.0.1:9645."),
	intKey("socket.request.max.bytes", TypeInt, 104857600, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.SocketRequestMaxBytes },
		"Largest request accepted; checked on the size prefix before reading."),
	intKey("connections.max.idle.ms", TypeLong, 600000, anyInt, noMax, func(b *Broker) *int64 { return &b.ConnectionsMaxIdleMs },
		"Idle connections are closed after this many milliseconds (-1: never)."),
	intKey("message.max.bytes", TypeInt, 1048588, 0, math.MaxInt32, func(b *Broker) *int64 { return &b.MessageMaxBytes },
		"Largest record batch accepted (after compression). Topic synonym: max.message.bytes."),
	intKey("fetch.max.bytes", TypeInt, 57671680, 1024, math.MaxInt32, func(b *Broker) *int64 { return &b.FetchMaxBytes },
		"Most bytes one consumer fetch response may carry, whatever the client asks (the first batch is always returned)."),

	// Limits against hostile or broken clients. The connection limits and
	// queued.max.request.bytes are Kafka's (the latter with a bounded
	// default: Kafka's -1 lets a burst of large requests exhaust memory);
	// the weir.* keys have no Kafka counterpart.
	intKey("queued.max.request.bytes", TypeLong, 268435456, anyInt, noMax, func(b *Broker) *int64 { return &b.QueuedMaxRequestBytes },
		"Memory budget for requests in flight (read, decoded, being answered); reading pauses while it is used up. -1 or 0: unbounded."),
	intKey("max.connections", TypeInt, math.MaxInt32, 0, math.MaxInt32, func(b *Broker) *int32 { return &b.MaxConnections },
		"Most client connections at once; past it new connections wait to be accepted (the inter-broker listener is exempt when there are several listeners)."),
	intKey("max.connections.per.ip", TypeInt, math.MaxInt32, 0, math.MaxInt32, func(b *Broker) *int32 { return &b.MaxConnectionsPerIP },
		"Most connections from one IP address; a new one past it is closed at once. 0 only with overrides."),
	complexKey("max.connections.per.ip.overrides", TypeString, "", false,
		func(b *Broker, raw string) (err error) {
			b.MaxConnectionsPerIPOverrides, err = parseHostCounts("max.connections.per.ip.overrides", raw)
			return err
		},
		func(b *Broker) (string, bool) { return formatHostCounts(b.MaxConnectionsPerIPOverrides), true },
		"Per-host or per-IP exceptions to max.connections.per.ip, host:count,host:count."),
	intKey("weir.request.max.bytes.non.produce", TypeInt, 4194304, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.RequestMaxBytesNonProduce },
		"Largest request frame of any API but Produce (capped by socket.request.max.bytes); checked once the API key is read."),
	intKey("weir.transfer.timeout.ms", TypeLong, 30000, anyInt, noMax, func(b *Broker) *int64 { return &b.TransferTimeoutMs },
		"A request must arrive, and a response leave, within this long of its first byte plus 1 s per weir.transfer.min.bytes.per.second moved (<= 0: no limit)."),
	intKey("weir.transfer.min.bytes.per.second", TypeLong, 1048576, 1, noMax, func(b *Broker) *int64 { return &b.TransferMinBytesPerSecond },
		"Each this many bytes moved buys a request or response one more second beyond weir.transfer.timeout.ms."),

	boolKey("weir.fetch.sendfile.enable", true, func(b *Broker) *bool { return &b.FetchSendfileEnable },
		"Send fetch responses' record sets from the segment files with sendfile, not read through a buffer."),

	// Observability (weir's keys; Kafka has JMX instead).
	complexKey("metrics.listener", TypeString, "", true,
		func(b *Broker, raw string) (err error) {
			b.MetricsListener, err = parseMetricsListener(raw)
			return err
		},
		func(b *Broker) (string, bool) { return b.MetricsListener, b.MetricsListener != "" },
		"http://host:port serving /metrics (Prometheus), /healthz and /readyz; unset: off."),
	boolKey("metrics.pprof.enable", false, func(b *Broker) *bool { return &b.MetricsPprofEnable },
		"Also serve Go's /debug/pprof on metrics.listener."),
	boolKey("metrics.partition.level.enable", false, func(b *Broker) *bool { return &b.MetricsPartitionLevelEnable },
		"Export per-partition series (log size, segment count): one series per hosted partition."),

	// Storage.
	complexKey("log.dirs", TypeString, "", true,
		func(b *Broker, raw string) error {
			b.LogDirs = parseList(raw)
			return checkDirs("log.dirs", raw, b.LogDirs)
		},
		func(b *Broker) (string, bool) { return strings.Join(b.LogDirs, ","), true },
		"Directories holding the partition logs, comma-separated; overrides log.dir."),
	complexKey("log.dir", TypeString, "./weir-data", false,
		func(b *Broker, raw string) error {
			// Kafka reads log.dir as a list too when log.dirs is unset.
			b.logDir = strings.TrimSpace(raw)
			return checkDirs("log.dir", raw, parseList(raw))
		},
		func(b *Broker) (string, bool) { return b.logDir, true },
		"The log directory (or comma-separated directories) when log.dirs is not set."),
	stringKey("metadata.log.dir", "", true, func(b *Broker) *string { return &b.MetadataLogDir },
		"Directory of the Raft metadata log; defaults to the first log directory."),
	intKey("log.segment.bytes", TypeInt, 1073741824, 14, math.MaxInt32, func(b *Broker) *int64 { return &b.LogSegmentBytes },
		"A segment rolls when it would exceed this size. Topic synonym: segment.bytes."),
	optIntKey("log.roll.ms", TypeLong, 1, func(b *Broker) **int64 { return &b.logRollMs },
		"A segment rolls when its first record is this old; overrides log.roll.hours. Topic synonym: segment.ms."),
	intKey("log.roll.hours", TypeInt, 168, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.logRollHours },
		"log.roll.ms in hours."),
	intKey("log.index.interval.bytes", TypeInt, 4096, 0, math.MaxInt32, func(b *Broker) *int64 { return &b.LogIndexIntervalBytes },
		"An offset index entry is added every this many bytes. Topic synonym: index.interval.bytes."),
	intKey("log.index.size.max.bytes", TypeInt, 10485760, 4, math.MaxInt32, func(b *Broker) *int64 { return &b.LogIndexSizeMaxBytes },
		"Largest offset index; a full index rolls the segment. Topic synonym: segment.index.bytes."),
	optIntKey("log.retention.ms", TypeLong, anyInt, func(b *Broker) **int64 { return &b.logRetentionMs },
		"Segments older than this are deleted (-1: never); overrides .minutes and .hours. Topic synonym: retention.ms."),
	optIntKey("log.retention.minutes", TypeInt, anyInt, func(b *Broker) **int64 { return &b.logRetentionMinutes },
		"log.retention.ms in minutes; overrides log.retention.hours."),
	intKey("log.retention.hours", TypeInt, 168, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.logRetentionHours },
		"log.retention.ms in hours."),
	intKey("log.retention.bytes", TypeLong, -1, anyInt, noMax, func(b *Broker) *int64 { return &b.LogRetentionBytes },
		"Oldest segments are deleted while a partition is larger than this (-1: no limit). Topic synonym: retention.bytes."),
	intKey("log.retention.check.interval.ms", TypeLong, 300000, 1, noMax, func(b *Broker) *int64 { return &b.LogRetentionCheckIntervalMs },
		"How often retention is enforced."),
	intKey("log.flush.interval.messages", TypeLong, math.MaxInt64, 1, noMax, func(b *Broker) *int64 { return &b.LogFlushIntervalMessages },
		"fsync after this many messages (default: never; durability comes from replication). Topic synonym: flush.messages."),
	optIntKey("log.flush.interval.ms", TypeLong, 0, func(b *Broker) **int64 { return &b.logFlushIntervalMs },
		"fsync when the oldest unflushed message is this old; unset: log.flush.scheduler.interval.ms. Topic synonym: flush.ms."),
	intKey("log.flush.scheduler.interval.ms", TypeLong, math.MaxInt64, 0, noMax, func(b *Broker) *int64 { return &b.LogFlushSchedulerIntervalMs },
		"How often the flusher checks logs; the flush interval when log.flush.interval.ms is unset."),
	intKey("log.flush.offset.checkpoint.interval.ms", TypeInt, 60000, 0, math.MaxInt32, func(b *Broker) *int64 { return &b.LogFlushOffsetCheckpointIntervalMs },
		"How often the recovery-point checkpoint is written."),
	enumKey("log.message.timestamp.type", "CreateTime", timestampTypes, func(b *Broker) *string { return &b.LogMessageTimestampType },
		"CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's clock. Topic synonym: message.timestamp.type."),
	complexKey("log.cleanup.policy", TypeList, "delete", false,
		func(b *Broker, raw string) (err error) {
			b.LogCleanupPolicy, err = parseEnumList("log.cleanup.policy", raw, cleanupPolicies)
			return err
		},
		func(b *Broker) (string, bool) { return strings.Join(b.LogCleanupPolicy, ","), true },
		"delete (retention), compact (keep the last record per key), or both. Topic synonym: cleanup.policy."),
	intKey("log.segment.delete.delay.ms", TypeLong, 60000, 0, noMax, func(b *Broker) *int64 { return &b.LogSegmentDeleteDelayMs },
		"Deleted segments are removed from disk after this delay. Topic synonym: file.delete.delay.ms."),
	intKey("log.cleaner.delete.retention.ms", TypeLong, 86400000, 0, noMax, func(b *Broker) *int64 { return &b.LogCleanerDeleteRetentionMs },
		"How long tombstones are kept in compacted topics. Topic synonym: delete.retention.ms."),
	intKey("log.cleaner.min.compaction.lag.ms", TypeLong, 0, 0, noMax, func(b *Broker) *int64 { return &b.LogCleanerMinCompactionLagMs },
		"Records younger than this are not compacted. Topic synonym: min.compaction.lag.ms."),
	{
		name: "log.cleaner.min.cleanable.ratio", typ: TypeDouble, def: "0.5",
		doc: "Dirty ratio at which a log is compacted. Topic synonym: min.cleanable.dirty.ratio.",
		set: func(b *Broker, raw string) (err error) {
			b.LogCleanerMinCleanableRatio, err = parseDouble("log.cleaner.min.cleanable.ratio", raw, 0, 1)
			return err
		},
		get: func(b *Broker) (string, bool) { return formatDouble(b.LogCleanerMinCleanableRatio), true },
	},
	boolKey("log.cleaner.enable", true, func(b *Broker) *bool { return &b.LogCleanerEnable },
		"Run the log cleaner, which compacts topics with cleanup.policy=compact (__consumer_offsets among them)."),
	intKey("log.cleaner.backoff.ms", TypeLong, 15000, 0, noMax, func(b *Broker) *int64 { return &b.LogCleanerBackoffMs },
		"How long the cleaner sleeps when no log needs cleaning."),
	intKey("log.cleaner.dedupe.buffer.size", TypeLong, 134217728, 1<<20, noMax, func(b *Broker) *int64 { return &b.LogCleanerDedupeBufferSize },
		"Memory for the cleaner's key -> latest offset map; a pass stops at the offset where it fills."),
	intKey("weir.log.max.open.files", TypeInt, 0, 0, math.MaxInt32, func(b *Broker) *int32 { return &b.LogMaxOpenFiles },
		"weir's own key: segment files kept open at once across all partitions (the rest are reopened on use); 0 = half of the process's open file limit (RLIMIT_NOFILE), at most that limit minus 256, at least 16."),
	enumKey("compression.type", "producer", compressionTypes, func(b *Broker) *string { return &b.CompressionType },
		"Compression of stored batches; producer keeps what the producer sent."),

	// Topics.
	intKey("num.partitions", TypeInt, 1, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.NumPartitions },
		"Partitions of an auto-created topic, or of CreateTopics without a count."),
	intKey("default.replication.factor", TypeInt, 1, 1, math.MaxInt16, func(b *Broker) *int16 { return &b.DefaultReplicationFactor },
		"Replication factor of an auto-created topic, or of CreateTopics without one."),
	boolKey("auto.create.topics.enable", true, func(b *Broker) *bool { return &b.AutoCreateTopicsEnable },
		"Create a topic when a client asks for its metadata."),
	boolKey("delete.topic.enable", true, func(b *Broker) *bool { return &b.DeleteTopicEnable },
		"Allow DeleteTopics."),
	intKey("min.insync.replicas", TypeInt, 1, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.MinInsyncReplicas },
		"With acks=all, a write needs this many in-sync replicas."),
	// KIP-578's names. Kafka proposed no limit by default; weir defaults to
	// the figures Kafka has long recommended, 4000 partitions per broker and
	// 200000 per cluster, because every partition costs a broker memory,
	// file descriptors and startup time whether it is used or not.
	intKey("max.broker.partitions", TypeInt, 4000, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.MaxBrokerPartitions },
		"Most partition replicas one broker may hold; CreateTopics, CreatePartitions and auto-creation past it get POLICY_VIOLATION (internal topics are exempt but count)."),
	intKey("max.partitions", TypeInt, 200000, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.MaxPartitions },
		"Most partitions the cluster may hold; CreateTopics, CreatePartitions and auto-creation past it get POLICY_VIOLATION (internal topics are exempt but count)."),

	// Replication and the controller.
	intKey("replica.lag.time.max.ms", TypeLong, 30000, anyInt, noMax, func(b *Broker) *int64 { return &b.ReplicaLagTimeMaxMs },
		"A follower not caught up for this long leaves the ISR."),
	intKey("replica.fetch.max.bytes", TypeInt, 1048576, 0, math.MaxInt32, func(b *Broker) *int64 { return &b.ReplicaFetchMaxBytes },
		"Bytes a follower asks for per partition."),
	intKey("replica.fetch.response.max.bytes", TypeInt, 10485760, 0, math.MaxInt32, func(b *Broker) *int64 { return &b.ReplicaFetchResponseMaxBytes },
		"Bytes a follower asks for per fetch."),
	intKey("replica.fetch.min.bytes", TypeInt, 1, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.ReplicaFetchMinBytes },
		"A follower fetch waits until this many bytes are available, or replica.fetch.wait.max.ms."),
	intKey("replica.fetch.wait.max.ms", TypeInt, 500, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.ReplicaFetchWaitMaxMs },
		"Longest wait of a follower fetch."),
	intKey("replica.fetch.backoff.ms", TypeInt, 1000, 0, math.MaxInt32, func(b *Broker) *int64 { return &b.ReplicaFetchBackoffMs },
		"Pause after a failed follower fetch. An answer that only says the leader has not caught up with the metadata yet (unknown topic, not leader, leader not available) is retried after 20 ms, doubling up to this."),
	intKey("num.replica.fetchers", TypeInt, 1, anyInt, math.MaxInt32, func(b *Broker) *int32 { return &b.NumReplicaFetchers },
		"Fetcher threads per source broker."),
	intKey("replica.reassignment.throttle.bytes.per.sec", TypeLong, -1, -1, noMax, func(b *Broker) *int64 { return &b.ReplicaReassignmentThrottleBytesPerSec },
		"Most bytes per second this broker fetches for the replicas a reassignment is adding to it, until they are in sync; -1 or 0: no limit. Dynamic (weir's key)."),
	boolKey("unclean.leader.election.enable", false, func(b *Broker) *bool { return &b.UncleanLeaderElectionEnable },
		"Elect a leader outside the ISR when no ISR member is alive (may lose data)."),
	intKey("broker.session.timeout.ms", TypeInt, 9000, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.BrokerSessionTimeoutMs },
		"A broker without a heartbeat for this long is fenced by the controller."),
	intKey("broker.heartbeat.interval.ms", TypeInt, 2000, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.BrokerHeartbeatIntervalMs },
		"How often a broker heartbeats to the controller."),
	boolKey("controlled.shutdown.enable", true, func(b *Broker) *bool { return &b.ControlledShutdownEnable },
		"On SIGTERM, move this broker's leaderships to other replicas before stopping."),
	intKey("controlled.shutdown.timeout.ms", TypeLong, 60000, 0, noMax, func(b *Broker) *int64 { return &b.ControlledShutdownTimeoutMs },
		"How long a controlled shutdown may wait for the controller before the broker stops anyway (weir's key); with no controller answering at all, at most broker.session.timeout.ms."),
	boolKey("auto.leader.rebalance.enable", true, func(b *Broker) *bool { return &b.AutoLeaderRebalanceEnable },
		"The controller moves leadership back to preferred replicas that are in sync."),
	intKey("leader.imbalance.check.interval.seconds", TypeLong, 300, 1, noMax, func(b *Broker) *int64 { return &b.LeaderImbalanceCheckIntervalSeconds },
		"How often the controller checks for leaders that are not the preferred replica."),
	intKey("replica.high.watermark.checkpoint.interval.ms", TypeLong, 5000, 1, noMax, func(b *Broker) *int64 { return &b.ReplicaHighWatermarkCheckpointIntervalMs },
		"How often each log dir's replication-offset-checkpoint is written."),

	// Groups, offsets and transactions.
	intKey("offsets.topic.num.partitions", TypeInt, 50, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.OffsetsTopicNumPartitions },
		"Partitions of __consumer_offsets."),
	intKey("offsets.topic.replication.factor", TypeShort, 3, 1, math.MaxInt16, func(b *Broker) *int16 { return &b.OffsetsTopicReplicationFactor },
		"Replication factor of __consumer_offsets (capped by the number of brokers)."),
	intKey("offsets.topic.segment.bytes", TypeInt, 104857600, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.OffsetsTopicSegmentBytes },
		"Segment size of __consumer_offsets."),
	intKey("offsets.retention.minutes", TypeInt, 10080, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.OffsetsRetentionMinutes },
		"Committed offsets of an empty group are kept this long."),
	intKey("offsets.commit.timeout.ms", TypeInt, 5000, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.OffsetsCommitTimeoutMs },
		"A write of group state or offsets waits this long for the replicas of __consumer_offsets before it fails (COORDINATOR_NOT_AVAILABLE)."),
	intKey("group.initial.rebalance.delay.ms", TypeInt, 3000, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupInitialRebalanceDelayMs },
		"A new group waits this long for more members before its first rebalance."),
	intKey("group.min.session.timeout.ms", TypeInt, 6000, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupMinSessionTimeoutMs },
		"Smallest session timeout a consumer may ask for."),
	intKey("group.max.session.timeout.ms", TypeInt, 1800000, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupMaxSessionTimeoutMs },
		"Largest session timeout a consumer may ask for."),
	intKey("group.consumer.heartbeat.interval.ms", TypeInt, 5000, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupConsumerHeartbeatIntervalMs },
		"How often members of a consumer-protocol (KIP-848) group heartbeat."),
	intKey("group.consumer.session.timeout.ms", TypeInt, 45000, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.GroupConsumerSessionTimeoutMs },
		"A consumer-protocol (KIP-848) member silent this long is removed from its group."),
	intKey("producer.id.expiration.ms", TypeInt, 86400000, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.ProducerIDExpirationMs },
		"Idempotent producer state is dropped after this long without writes."),
	intKey("transactional.id.expiration.ms", TypeInt, 604800000, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.TransactionalIDExpirationMs },
		"A transactional id unused for this long expires."),
	intKey("transaction.max.timeout.ms", TypeInt, 900000, 1, math.MaxInt32, func(b *Broker) *int64 { return &b.TransactionMaxTimeoutMs },
		"Largest transaction timeout a producer may ask for."),
	intKey("transaction.state.log.num.partitions", TypeInt, 50, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.TransactionStateLogNumPartitions },
		"Partitions of __transaction_state."),
	intKey("transaction.state.log.replication.factor", TypeShort, 3, 1, math.MaxInt16, func(b *Broker) *int16 { return &b.TransactionStateLogReplicationFactor },
		"Replication factor of __transaction_state (capped by the number of brokers)."),
	intKey("transaction.state.log.min.isr", TypeInt, 2, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.TransactionStateLogMinISR },
		"min.insync.replicas of __transaction_state."),

	// Accepted for compatibility with Kafka's stock server.properties.
	intKey("num.network.threads", TypeInt, 3, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.NumNetworkThreads },
		"Accepted for compatibility; unused (one goroutine per connection)."),
	intKey("num.io.threads", TypeInt, 8, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.NumIOThreads },
		"Accepted for compatibility; unused."),
	intKey("socket.send.buffer.bytes", TypeInt, 102400, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.SocketSendBufferBytes },
		"Accepted for compatibility; unused: Linux sizes TCP buffers to the connection (autotuning), which a fixed SO_SNDBUF would turn off."),
	intKey("socket.receive.buffer.bytes", TypeInt, 102400, anyInt, math.MaxInt32, func(b *Broker) *int64 { return &b.SocketReceiveBufferBytes },
		"Accepted for compatibility; unused: Linux sizes TCP buffers to the connection (autotuning), which a fixed SO_RCVBUF would turn off."),
	intKey("num.recovery.threads.per.data.dir", TypeInt, 2, 1, math.MaxInt32, func(b *Broker) *int32 { return &b.NumRecoveryThreadsPerDataDir },
		"Logs of one log dir loaded (recovered after a crash) at once at start, and flushed at once at shutdown."),
}

// brokerKeyIndex maps a key name to its position in brokerKeys. Built once
// and never modified.
var brokerKeyIndex = func() map[string]int {
	m := make(map[string]int, len(brokerKeys))
	for i, k := range brokerKeys {
		m[k.name] = i
	}
	return m
}()

func knownBrokerKey(name string) bool {
	_, ok := brokerKeyIndex[name]
	return ok
}

func checkDirs(key, raw string, dirs []string) error {
	if len(dirs) == 0 {
		return invalid(key, raw, "at least one directory is required")
	}
	for _, d := range dirs {
		if d == "" {
			return invalid(key, raw, "empty directory name")
		}
	}
	return nil
}
