package config

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// TopicConfig is the effective configuration of one topic: its overrides
// over the broker's defaults. Sizes and durations are int64 as in Broker.
type TopicConfig struct {
	RetentionMs                 int64    // retention.ms (-1: unlimited)
	RetentionBytes              int64    // retention.bytes (-1: unlimited)
	SegmentBytes                int64    // segment.bytes
	SegmentMs                   int64    // segment.ms
	SegmentIndexBytes           int64    // segment.index.bytes
	IndexIntervalBytes          int64    // index.interval.bytes
	MaxMessageBytes             int64    // max.message.bytes
	MinInsyncReplicas           int32    // min.insync.replicas
	CleanupPolicy               []string // cleanup.policy: "delete", "compact", or both
	MessageTimestampType        string   // message.timestamp.type: CreateTime | LogAppendTime
	LogAppendTime               bool     // MessageTimestampType == "LogAppendTime"
	FlushMessages               int64    // flush.messages (MaxInt64: never)
	FlushMs                     int64    // flush.ms (MaxInt64: never)
	FileDeleteDelayMs           int64    // file.delete.delay.ms
	UncleanLeaderElectionEnable bool     // unclean.leader.election.enable
	DeleteRetentionMs           int64    // delete.retention.ms
	MinCompactionLagMs          int64    // min.compaction.lag.ms
	MinCleanableDirtyRatio      float64  // min.cleanable.dirty.ratio
	CompressionType             string   // compression.type
}

// Deletes reports whether old segments are deleted by retention.
func (tc TopicConfig) Deletes() bool { return slices.Contains(tc.CleanupPolicy, "delete") }

// Compacts reports whether the log is compacted.
func (tc TopicConfig) Compacts() bool { return slices.Contains(tc.CleanupPolicy, "compact") }

// topicKey describes one per-topic key and the broker keys that give its
// default (most preferred first).
type topicKey struct {
	name       string
	typ        Type
	brokerKeys []string
	doc        string
	set        func(tc *TopicConfig, raw string) error // stores only a valid value
	get        func(tc *TopicConfig) string
}

func topicInt[T ~int32 | ~int64](name string, typ Type, lo int64, brokerKeys []string, field func(*TopicConfig) *T, doc string) topicKey {
	hi := int64(math.MaxInt64)
	if typ == TypeInt {
		hi = math.MaxInt32
	}
	return topicKey{
		name: name, typ: typ, brokerKeys: brokerKeys, doc: doc,
		set: func(tc *TopicConfig, raw string) error {
			n, err := parseInt(name, raw, typ, lo, hi)
			if err == nil {
				*field(tc) = T(n)
			}
			return err
		},
		get: func(tc *TopicConfig) string { return formatInt(int64(*field(tc))) },
	}
}

func topicEnum(name string, allowed []string, brokerKey string, field func(*TopicConfig) *string, doc string) topicKey {
	return topicKey{
		name: name, typ: TypeString, brokerKeys: []string{brokerKey}, doc: doc,
		set: func(tc *TopicConfig, raw string) error {
			v, err := parseEnum(name, raw, allowed)
			if err == nil {
				*field(tc) = v
			}
			return err
		},
		get: func(tc *TopicConfig) string { return *field(tc) },
	}
}

// topicKeys is the table of every per-topic key weir knows. It is never
// modified.
var topicKeys = []topicKey{
	topicInt("retention.ms", TypeLong, -1, []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		func(tc *TopicConfig) *int64 { return &tc.RetentionMs }, "Segments older than this are deleted (-1: never)."),
	topicInt("retention.bytes", TypeLong, anyInt, []string{"log.retention.bytes"},
		func(tc *TopicConfig) *int64 { return &tc.RetentionBytes }, "Oldest segments are deleted while a partition is larger than this (-1: no limit)."),
	topicInt("segment.bytes", TypeInt, 14, []string{"log.segment.bytes"},
		func(tc *TopicConfig) *int64 { return &tc.SegmentBytes }, "A segment rolls when it would exceed this size."),
	topicInt("segment.ms", TypeLong, 1, []string{"log.roll.ms", "log.roll.hours"},
		func(tc *TopicConfig) *int64 { return &tc.SegmentMs }, "A segment rolls when its first record is this old."),
	topicInt("segment.index.bytes", TypeInt, 4, []string{"log.index.size.max.bytes"},
		func(tc *TopicConfig) *int64 { return &tc.SegmentIndexBytes }, "Largest offset index of a segment."),
	topicInt("index.interval.bytes", TypeInt, 0, []string{"log.index.interval.bytes"},
		func(tc *TopicConfig) *int64 { return &tc.IndexIntervalBytes }, "An offset index entry is added every this many bytes."),
	topicInt("max.message.bytes", TypeInt, 0, []string{"message.max.bytes"},
		func(tc *TopicConfig) *int64 { return &tc.MaxMessageBytes }, "Largest record batch accepted (after compression)."),
	topicInt("min.insync.replicas", TypeInt, 1, []string{"min.insync.replicas"},
		func(tc *TopicConfig) *int32 { return &tc.MinInsyncReplicas }, "With acks=all, a write needs this many in-sync replicas."),
	{
		name: "cleanup.policy", typ: TypeList, brokerKeys: []string{"log.cleanup.policy"},
		doc: "delete (retention), compact (keep the last record per key), or both.",
		set: func(tc *TopicConfig, raw string) error {
			v, err := parseEnumList("cleanup.policy", raw, cleanupPolicies)
			if err == nil {
				tc.CleanupPolicy = v
			}
			return err
		},
		get: func(tc *TopicConfig) string { return strings.Join(tc.CleanupPolicy, ",") },
	},
	{
		name: "message.timestamp.type", typ: TypeString, brokerKeys: []string{"log.message.timestamp.type"},
		doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's clock.",
		set: func(tc *TopicConfig, raw string) error {
			v, err := parseEnum("message.timestamp.type", raw, timestampTypes)
			if err == nil {
				tc.MessageTimestampType, tc.LogAppendTime = v, v == "LogAppendTime"
			}
			return err
		},
		get: func(tc *TopicConfig) string { return tc.MessageTimestampType },
	},
	topicInt("flush.messages", TypeLong, 1, []string{"log.flush.interval.messages"},
		func(tc *TopicConfig) *int64 { return &tc.FlushMessages }, "fsync after this many messages."),
	topicInt("flush.ms", TypeLong, 0, []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
		func(tc *TopicConfig) *int64 { return &tc.FlushMs }, "fsync when the oldest unflushed message is this old."),
	topicInt("file.delete.delay.ms", TypeLong, 0, []string{"log.segment.delete.delay.ms"},
		func(tc *TopicConfig) *int64 { return &tc.FileDeleteDelayMs }, "Deleted segments are removed from disk after this delay."),
	{
		name: "unclean.leader.election.enable", typ: TypeBoolean, brokerKeys: []string{"unclean.leader.election.enable"},
		doc: "Elect a leader outside the ISR when no ISR member is alive (may lose data).",
		set: func(tc *TopicConfig, raw string) error {
			v, err := parseBool("unclean.leader.election.enable", raw)
			if err == nil {
				tc.UncleanLeaderElectionEnable = v
			}
			return err
		},
		get: func(tc *TopicConfig) string { return fmt.Sprint(tc.UncleanLeaderElectionEnable) },
	},
	topicInt("delete.retention.ms", TypeLong, 0, []string{"log.cleaner.delete.retention.ms"},
		func(tc *TopicConfig) *int64 { return &tc.DeleteRetentionMs }, "How long tombstones are kept in a compacted topic."),
	topicInt("min.compaction.lag.ms", TypeLong, 0, []string{"log.cleaner.min.compaction.lag.ms"},
		func(tc *TopicConfig) *int64 { return &tc.MinCompactionLagMs }, "Records younger than this are not compacted."),
	{
		name: "min.cleanable.dirty.ratio", typ: TypeDouble, brokerKeys: []string{"log.cleaner.min.cleanable.ratio"},
		doc: "Dirty ratio at which the log is compacted.",
		set: func(tc *TopicConfig, raw string) error {
			v, err := parseDouble("min.cleanable.dirty.ratio", raw, 0, 1)
			if err == nil {
				tc.MinCleanableDirtyRatio = v
			}
			return err
		},
		get: func(tc *TopicConfig) string { return formatDouble(tc.MinCleanableDirtyRatio) },
	},
	topicEnum("compression.type", compressionTypes, "compression.type",
		func(tc *TopicConfig) *string { return &tc.CompressionType }, "Compression of stored batches; producer keeps what the producer sent."),
}

func findTopicKey(name string) (topicKey, bool) {
	i := slices.IndexFunc(topicKeys, func(k topicKey) bool { return k.name == name })
	if i < 0 {
		return topicKey{}, false
	}
	return topicKeys[i], true
}

// TopicConfigType returns the type of a per-topic key (the broker needs it
// for IncrementalAlterConfigs APPEND/SUBTRACT, which only lists allow).
func TopicConfigType(key string) (Type, bool) {
	k, ok := findTopicKey(key)
	return k.typ, ok
}

// ValidateTopicConfig checks one per-topic override. An unknown key gives
// an error wrapping ErrUnknownConfig; a bad value a *ValueError (wrapping
// ErrInvalidConfig) naming key and value.
func ValidateTopicConfig(key, value string) error {
	k, ok := findTopicKey(key)
	if !ok {
		return unknownKey(key)
	}
	var scratch TopicConfig
	return k.set(&scratch, value)
}

// ValidateTopicConfigs checks every override, in key order, and returns
// the first error.
func ValidateTopicConfigs(overrides map[string]string) error {
	for _, key := range sortedKeys(overrides) {
		if err := ValidateTopicConfig(key, overrides[key]); err != nil {
			return err
		}
	}
	return nil
}

// topicBase is the topic configuration with no overrides.
func (b *Broker) topicBase() TopicConfig {
	return TopicConfig{
		RetentionMs:                 b.LogRetentionMs,
		RetentionBytes:              b.LogRetentionBytes,
		SegmentBytes:                b.LogSegmentBytes,
		SegmentMs:                   b.LogRollMs,
		SegmentIndexBytes:           b.LogIndexSizeMaxBytes,
		IndexIntervalBytes:          b.LogIndexIntervalBytes,
		MaxMessageBytes:             b.MessageMaxBytes,
		MinInsyncReplicas:           b.MinInsyncReplicas,
		CleanupPolicy:               slices.Clone(b.LogCleanupPolicy),
		MessageTimestampType:        b.LogMessageTimestampType,
		LogAppendTime:               b.LogMessageTimestampType == "LogAppendTime",
		FlushMessages:               b.LogFlushIntervalMessages,
		FlushMs:                     b.LogFlushIntervalMs,
		FileDeleteDelayMs:           b.LogSegmentDeleteDelayMs,
		UncleanLeaderElectionEnable: b.UncleanLeaderElectionEnable,
		DeleteRetentionMs:           b.LogCleanerDeleteRetentionMs,
		MinCompactionLagMs:          b.LogCleanerMinCompactionLagMs,
		MinCleanableDirtyRatio:      b.LogCleanerMinCleanableRatio,
		CompressionType:             b.CompressionType,
	}
}

// TopicDefaults maps every per-topic key to the value a topic without
// overrides gets from this broker.
func (b *Broker) TopicDefaults() map[string]string {
	base := b.topicBase()
	m := make(map[string]string, len(topicKeys))
	for _, k := range topicKeys {
		m[k.name] = k.get(&base)
	}
	return m
}

// ResolveTopic applies a topic's overrides to the broker defaults. Unknown
// keys and invalid values are skipped (the default stays): overrides are
// meant to be checked with ValidateTopicConfig before they are stored, and
// a topic must stay usable even if a later version tightens a rule.
func (b *Broker) ResolveTopic(overrides map[string]string) TopicConfig {
	tc := b.topicBase()
	for _, key := range sortedKeys(overrides) {
		if k, ok := findTopicKey(key); ok {
			_ = k.set(&tc, overrides[key]) // invalid: keep the default, as documented
		}
	}
	return tc
}

// TopicEntries lists every per-topic key of a topic for DescribeConfigs,
// sorted by name: DYNAMIC_TOPIC_CONFIG for a (valid) override, else the
// source of the most preferred broker synonym (DYNAMIC_BROKER_CONFIG,
// DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG), else
// DEFAULT_CONFIG.
func (b *Broker) TopicEntries(overrides map[string]string) []Entry {
	tc := b.ResolveTopic(overrides)
	out := make([]Entry, 0, len(topicKeys))
	for _, k := range topicKeys {
		e := Entry{Name: k.name, Value: k.get(&tc), Type: k.typ, Doc: k.doc, Source: SourceDefaultConfig}
		syn := b.brokerSynonyms(k.brokerKeys)
		if raw, ok := overrides[k.name]; ok && ValidateTopicConfig(k.name, raw) == nil {
			e.Source = SourceDynamicTopicConfig
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.name, Value: e.Value, Source: SourceDynamicTopicConfig})
		} else if len(syn) > 0 {
			e.Source = syn[0].Source
		}
		e.Synonyms = append(e.Synonyms, syn...)
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
