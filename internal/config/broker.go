package config

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
)

// Broker is the parsed broker configuration: every field already holds its
// effective value (explicit setting, else Kafka's or weir's default, with
// synonyms such as log.retention.{ms,minutes,hours} resolved). Byte sizes
// and durations are int64 even where Kafka's type is INT (the range checks
// are still Kafka's); counts and ids are int32, replication factors int16.
type Broker struct {
	// Identity and roles.
	NodeID       int32    // node.id
	ProcessRoles []string // process.roles: "broker" and/or "controller"
	BrokerRack   string   // broker.rack ("" = none)

	// Network.
	Listeners               []Listener        // listeners (bound; port 0 = any)
	AdvertisedListeners     []Listener        // advertised.listeners (default: Listeners minus controller ones)
	ControllerListenerNames []string          // controller.listener.names
	ProtocolMap             map[string]string // listener.security.protocol.map (all PLAINTEXT)
	InterBrokerListenerName string            // inter.broker.listener.name
	QuorumVoters            []Voter           // controller.quorum.voters
	SocketRequestMaxBytes   int64             // socket.request.max.bytes
	ConnectionsMaxIdleMs    int64             // connections.max.idle.ms
	MessageMaxBytes         int64             // message.max.bytes
	FetchMaxBytes           int64             // fetch.max.bytes
	FetchSendfileEnable     bool              // weir.fetch.sendfile.enable (weir's)
	ConsoleListener         string            // console.listener: http://host:port ("" = off; weir's)

	// Observability (weir's keys).
	MetricsListener             string // metrics.listener: http://host:port, "" = off
	MetricsPprofEnable          bool   // metrics.pprof.enable
	MetricsPartitionLevelEnable bool   // metrics.partition.level.enable

	// Limits against hostile or broken clients.
	QueuedMaxRequestBytes        int64            // queued.max.request.bytes (<= 0 = unbounded)
	MaxConnections               int32            // max.connections
	MaxConnectionsPerIP          int32            // max.connections.per.ip
	MaxConnectionsPerIPOverrides map[string]int32 // max.connections.per.ip.overrides: host or IP -> limit
	RequestMaxBytesNonProduce    int64            // weir.request.max.bytes.non.produce
	TransferTimeoutMs            int64            // weir.transfer.timeout.ms (<= 0 = none)
	TransferMinBytesPerSecond    int64            // weir.transfer.min.bytes.per.second

	// Storage.
	LogDirs                            []string // log.dirs, else log.dir
	MetadataLogDir                     string   // metadata.log.dir ("" = first of LogDirs)
	LogSegmentBytes                    int64    // log.segment.bytes
	LogRollMs                          int64    // log.roll.ms, else log.roll.hours
	LogIndexIntervalBytes              int64    // log.index.interval.bytes
	LogIndexSizeMaxBytes               int64    // log.index.size.max.bytes
	LogRetentionMs                     int64    // log.retention.ms > .minutes > .hours; -1 = unlimited
	LogRetentionBytes                  int64    // log.retention.bytes; -1 = unlimited
	LogRetentionCheckIntervalMs        int64    // log.retention.check.interval.ms
	LogFlushIntervalMessages           int64    // log.flush.interval.messages (MaxInt64 = never)
	LogFlushIntervalMs                 int64    // log.flush.interval.ms, else log.flush.scheduler.interval.ms (MaxInt64 = never)
	LogFlushSchedulerIntervalMs        int64    // log.flush.scheduler.interval.ms
	LogFlushOffsetCheckpointIntervalMs int64    // log.flush.offset.checkpoint.interval.ms
	LogMessageTimestampType            string   // log.message.timestamp.type: CreateTime | LogAppendTime
	LogCleanupPolicy                   []string // log.cleanup.policy: delete and/or compact
	LogSegmentDeleteDelayMs            int64    // log.segment.delete.delay.ms (topic: file.delete.delay.ms)
	LogCleanerDeleteRetentionMs        int64    // log.cleaner.delete.retention.ms (topic: delete.retention.ms)
	LogCleanerMinCompactionLagMs       int64    // log.cleaner.min.compaction.lag.ms (topic: min.compaction.lag.ms)
	LogCleanerMinCleanableRatio        float64  // log.cleaner.min.cleanable.ratio (topic: min.cleanable.dirty.ratio)
	LogCleanerEnable                   bool     // log.cleaner.enable
	LogCleanerBackoffMs                int64    // log.cleaner.backoff.ms
	LogCleanerDedupeBufferSize         int64    // log.cleaner.dedupe.buffer.size
	LogMaxOpenFiles                    int32    // weir.log.max.open.files (weir's; 0 = from RLIMIT_NOFILE)
	CompressionType                    string   // compression.type

	// Topics.
	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	AutoCreateTopicsEnable   bool  // auto.create.topics.enable
	DeleteTopicEnable        bool  // delete.topic.enable
	MinInsyncReplicas        int32 // min.insync.replicas
	MaxBrokerPartitions      int32 // max.broker.partitions (KIP-578)
	MaxPartitions            int32 // max.partitions (KIP-578)

	// Replication and the controller.
	ReplicaLagTimeMaxMs          int64 // replica.lag.time.max.ms
	ReplicaFetchMaxBytes         int64 // replica.fetch.max.bytes
	ReplicaFetchResponseMaxBytes int64 // replica.fetch.response.max.bytes
	ReplicaFetchMinBytes         int64 // replica.fetch.min.bytes
	ReplicaFetchWaitMaxMs        int64 // replica.fetch.wait.max.ms
	ReplicaFetchBackoffMs        int64 // replica.fetch.backoff.ms
	NumReplicaFetchers           int32 // num.replica.fetchers
	// replica.reassignment.throttle.bytes.per.sec (weir's; dynamic)
	ReplicaReassignmentThrottleBytesPerSec int64
	UncleanLeaderElectionEnable            bool  // unclean.leader.election.enable
	BrokerSessionTimeoutMs                 int64 // broker.session.timeout.ms
	BrokerHeartbeatIntervalMs              int64 // broker.heartbeat.interval.ms
	ControlledShutdownEnable               bool  // controlled.shutdown.enable
	ControlledShutdownTimeoutMs            int64 // controlled.shutdown.timeout.ms (weir's)
	AutoLeaderRebalanceEnable              bool  // auto.leader.rebalance.enable
	// leader.imbalance.check.interval.seconds
	LeaderImbalanceCheckIntervalSeconds int64
	// replica.high.watermark.checkpoint.interval.ms
	ReplicaHighWatermarkCheckpointIntervalMs int64

	// Groups, offsets and transactions.
	OffsetsTopicNumPartitions            int32 // offsets.topic.num.partitions
	OffsetsTopicReplicationFactor        int16 // offsets.topic.replication.factor (clamp to the broker count at creation)
	OffsetsTopicSegmentBytes             int64 // offsets.topic.segment.bytes
	OffsetsRetentionMinutes              int64 // offsets.retention.minutes
	OffsetsCommitTimeoutMs               int64 // offsets.commit.timeout.ms
	GroupInitialRebalanceDelayMs         int64 // group.initial.rebalance.delay.ms
	GroupMinSessionTimeoutMs             int64 // group.min.session.timeout.ms
	GroupMaxSessionTimeoutMs             int64 // group.max.session.timeout.ms
	GroupConsumerHeartbeatIntervalMs     int64 // group.consumer.heartbeat.interval.ms
	GroupConsumerSessionTimeoutMs        int64 // group.consumer.session.timeout.ms
	ProducerIDExpirationMs               int64 // producer.id.expiration.ms
	TransactionalIDExpirationMs          int64 // transactional.id.expiration.ms
	TransactionMaxTimeoutMs              int64 // transaction.max.timeout.ms
	TransactionStateLogNumPartitions     int32 // transaction.state.log.num.partitions
	TransactionStateLogReplicationFactor int16 // transaction.state.log.replication.factor
	TransactionStateLogMinISR            int32 // transaction.state.log.min.isr

	// Accepted so that Kafka's stock server.properties loads without
	// warnings; weir's design has no use for them.
	NumNetworkThreads            int32 // num.network.threads
	NumIOThreads                 int32 // num.io.threads
	SocketSendBufferBytes        int64 // socket.send.buffer.bytes (accepted, unused)
	SocketReceiveBufferBytes     int64 // socket.receive.buffer.bytes (accepted, unused)
	NumRecoveryThreadsPerDataDir int32 // num.recovery.threads.per.data.dir

	// Keys given only as synonyms of the resolved fields above.
	logDir              string
	logRollMs           *int64
	logRollHours        int64
	logRetentionMs      *int64
	logRetentionMinutes *int64
	logRetentionHours   int64
	logFlushIntervalMs  *int64

	explicit map[string]string // key -> raw value as given (file or override)

	// Set by WithDynamic (dynamic.go): the static configuration this one
	// derives from, and the dynamic values applied over it.
	static                *Broker
	dynDefault, dynBroker map[string]string
}

// Load reads a server.properties file (path may be "" for none), applies
// overrides ("key=value", as given to --override; they win over the file)
// and returns the configuration with every default filled in. Unknown keys
// are not errors: each yields a warning for the caller to log. An invalid
// value is an error naming the key, the value and the reason.
func Load(path string, overrides []string) (*Broker, []string, error) {
	props := make(map[string]string)
	var warnings []string
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("read config: %w", err)
		}
		entries, err := ParseProperties(data)
		if err != nil {
			return nil, nil, fmt.Errorf("parse %s: %w", path, err)
		}
		for _, p := range entries {
			if !knownBrokerKey(p.Key) {
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s", path, p.Line, unknownKeyWarning(p.Key)))
				continue
			}
			props[p.Key] = p.Value
		}
	}
	for _, o := range overrides {
		key, value, ok := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, nil, fmt.Errorf("override %q: want key=value", o)
		}
		if !knownBrokerKey(key) {
			warnings = append(warnings, "--override: "+unknownKeyWarning(key))
			continue
		}
		props[key] = value
	}
	b, more, err := New(props)
	return b, append(warnings, more...), err
}

// New builds the configuration from explicit key/value pairs, as Load does
// after reading its inputs; unknown keys give warnings. Tests use it to
// configure a broker without a file.
func New(props map[string]string) (*Broker, []string, error) {
	var warnings []string
	b := &Broker{explicit: make(map[string]string, len(props))}
	for k, v := range props {
		if !knownBrokerKey(k) {
			warnings = append(warnings, unknownKeyWarning(k))
			continue
		}
		b.explicit[k] = v
	}
	slices.Sort(warnings)
	for _, k := range brokerKeys {
		raw, ok := b.explicit[k.name]
		if !ok {
			if k.null {
				continue
			}
			raw = k.def
		}
		if err := k.set(b, raw); err != nil {
			return nil, warnings, err
		}
	}
	if err := b.resolve(); err != nil {
		return nil, warnings, err
	}
	return b, warnings, nil
}

// unknownKeyWarning says a key is ignored, pointing to the broker-level
// name when it is a topic-level key (a common slip: retention.ms for
// log.retention.ms).
func unknownKeyWarning(key string) string {
	if k, ok := findTopicKey(key); ok {
		return fmt.Sprintf("unknown configuration key %q ignored (it is a topic-level key; the broker default is %s)", key, k.brokerKeys[0])
	}
	return fmt.Sprintf("unknown configuration key %q ignored", key)
}

// Default is the configuration with nothing set: weir's single-node
// defaults.
func Default() *Broker {
	b, _, err := New(nil)
	if err != nil {
		panic(fmt.Sprintf("config defaults are invalid: %v", err)) // a bug in this package
	}
	return b
}

// IsSet reports whether key was given explicitly (file or override).
func (b *Broker) IsSet(key string) bool {
	_, ok := b.explicit[key]
	return ok
}

// HasRole reports whether process.roles includes role ("broker" or
// "controller").
func (b *Broker) HasRole(role string) bool { return slices.Contains(b.ProcessRoles, role) }

// IsControllerListener reports whether name is one of
// controller.listener.names.
func (b *Broker) IsControllerListener(name string) bool {
	return slices.Contains(b.ControllerListenerNames, strings.ToUpper(name))
}

// ClientListeners are the bound listeners clients and other brokers use:
// every listener that is not a controller listener.
func (b *Broker) ClientListeners() []Listener {
	var out []Listener
	for _, l := range b.Listeners {
		if !b.IsControllerListener(l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// ControllerListener is the bound listener the Raft controller uses: the
// first name of controller.listener.names found in listeners.
func (b *Broker) ControllerListener() (Listener, bool) {
	for _, name := range b.ControllerListenerNames {
		for _, l := range b.Listeners {
			if l.Name == name {
				return l, true
			}
		}
	}
	return Listener{}, false
}

// AdvertisedFor says how clients should reach the listener named
// listenerName, given the port it actually bound (which differs from the
// configured one when that was 0). An advertised port of 0 becomes the
// bound port; an empty or wildcard advertised host becomes the bind host,
// or this machine's host name when that is a wildcard too, as Kafka does.
// ok is false when listenerName is not advertised.
func (b *Broker) AdvertisedFor(listenerName string, boundPort int) (host string, port int, ok bool) {
	name := strings.ToUpper(listenerName)
	i := slices.IndexFunc(b.AdvertisedListeners, func(l Listener) bool { return l.Name == name })
	if i < 0 {
		return "", 0, false
	}
	adv := b.AdvertisedListeners[i]
	host, port = adv.Host, adv.Port
	if port == 0 {
		port = boundPort
	}
	if isWildcardHost(host) {
		for _, l := range b.Listeners {
			if l.Name == name {
				host = l.Host
			}
		}
	}
	if isWildcardHost(host) {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		host = h
	}
	return host, port, true
}

func isWildcardHost(h string) bool {
	if h == "" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}
