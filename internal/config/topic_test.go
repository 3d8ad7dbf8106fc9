package config

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestValidateTopicConfig(t *testing.T) {
	valid := map[string][]string{
		"retention.ms":                   {"-1", "0", "604800000", " 1 "},
		"retention.bytes":                {"-1", "-5", "1073741824"},
		"segment.bytes":                  {"14", "1048576", "2147483647"},
		"segment.ms":                     {"1", "9223372036854775807"},
		"segment.index.bytes":            {"4"},
		"index.interval.bytes":           {"0", "4096"},
		"max.message.bytes":              {"0", "1048588"},
		"min.insync.replicas":            {"1", "3"},
		"cleanup.policy":                 {"delete", "compact", "compact,delete", "delete, compact", ""},
		"message.timestamp.type":         {"CreateTime", "LogAppendTime"},
		"flush.messages":                 {"1", "9223372036854775807"},
		"flush.ms":                       {"0", "1000"},
		"file.delete.delay.ms":           {"0", "60000"},
		"unclean.leader.election.enable": {"true", "False"},
		"delete.retention.ms":            {"0", "86400000"},
		"min.compaction.lag.ms":          {"0"},
		"min.cleanable.dirty.ratio":      {"0", "0.5", "1"},
		"compression.type":               {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
	}
	if len(valid) != len(topicKeys) {
		t.Errorf("test covers %d topic keys, package has %d", len(valid), len(topicKeys))
	}
	for key, values := range valid {
		for _, v := range values {
			if err := ValidateTopicConfig(key, v); err != nil {
				t.Errorf("ValidateTopicConfig(%s, %q): %v", key, v, err)
			}
		}
	}

	invalid := []struct{ key, value, reason string }{
		{"retention.ms", "-2", "at least -1"},
		{"retention.ms", "7d", "not an integer"},
		{"retention.bytes", "", "not an integer"},
		{"segment.bytes", "13", "at least 14"},
		{"segment.bytes", "2147483648", "out of range"},
		{"segment.ms", "0", "at least 1"},
		{"segment.index.bytes", "3", "at least 4"},
		{"index.interval.bytes", "-1", "at least 0"},
		{"max.message.bytes", "-1", "at least 0"},
		{"min.insync.replicas", "0", "at least 1"},
		{"cleanup.policy", "remove", "not one of"},
		{"cleanup.policy", "Delete", "not one of"},
		{"message.timestamp.type", "logappendtime", "one of"},
		{"flush.messages", "0", "at least 1"},
		{"flush.ms", "-1", "at least 0"},
		{"file.delete.delay.ms", "-1", "at least 0"},
		{"unclean.leader.election.enable", "no", "true or false"},
		{"delete.retention.ms", "-1", "at least 0"},
		{"min.compaction.lag.ms", "-1", "at least 0"},
		{"min.cleanable.dirty.ratio", "-0.1", "between 0 and 1"},
		{"min.cleanable.dirty.ratio", "half", "not a number"},
		{"compression.type", "none", "one of"},
	}
	for _, tt := range invalid {
		err := ValidateTopicConfig(tt.key, tt.value)
		if err == nil || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ValidateTopicConfig(%s, %q) = %v, want ErrInvalidConfig", tt.key, tt.value, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tt.key) || !strings.Contains(msg, `"`+tt.value+`"`) || !strings.Contains(msg, tt.reason) {
			t.Errorf("ValidateTopicConfig(%s, %q) error %q should name key, value and %q", tt.key, tt.value, msg, tt.reason)
		}
	}

	for _, key := range []string{"log.retention.ms", "retention.hours", ""} {
		err := ValidateTopicConfig(key, "1")
		if !errors.Is(err, ErrUnknownConfig) || errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ValidateTopicConfig(%q) = %v, want only ErrUnknownConfig", key, err)
		}
	}
	if err := ValidateTopicConfigs(map[string]string{"retention.ms": "1", "segment.bytes": "1"}); err == nil || !strings.Contains(err.Error(), "segment.bytes") {
		t.Errorf("ValidateTopicConfigs error = %v, want segment.bytes", err)
	}
	if typ, ok := TopicConfigType("cleanup.policy"); !ok || typ != TypeList {
		t.Errorf("TopicConfigType(cleanup.policy) = %v, %v", typ, ok)
	}
}

func TestResolveTopic(t *testing.T) {
	b := mustNew(t, map[string]string{
		"log.retention.minutes": "10", "log.segment.bytes": "1048576", "log.message.timestamp.type": "LogAppendTime",
		"log.flush.interval.messages": "1",
	})
	def := b.ResolveTopic(nil)
	want := TopicConfig{
		RetentionMs: 600000, RetentionBytes: -1, SegmentBytes: 1048576, SegmentMs: 168 * 3600000,
		SegmentIndexBytes: 10485760, IndexIntervalBytes: 4096, MaxMessageBytes: 1048588, MinInsyncReplicas: 1,
		CleanupPolicy: []string{"delete"}, MessageTimestampType: "LogAppendTime", LogAppendTime: true,
		FlushMessages: 1, FlushMs: math.MaxInt64, FileDeleteDelayMs: 60000, DeleteRetentionMs: 86400000,
		MinCleanableDirtyRatio: 0.5, CompressionType: "producer",
	}
	if !reflect.DeepEqual(def, want) {
		t.Errorf("ResolveTopic(nil) =\n%+v, want\n%+v", def, want)
	}
	if !def.Deletes() || def.Compacts() {
		t.Error("default cleanup policy should delete and not compact")
	}

	tc := b.ResolveTopic(map[string]string{
		"retention.ms": "1000", "segment.bytes": "4096", "cleanup.policy": "compact",
		"message.timestamp.type": "CreateTime", "min.insync.replicas": "2",
		"max.message.bytes": "bogus", // invalid: ignored, default kept
		"no.such.key":       "1",     // unknown: ignored
	})
	if tc.RetentionMs != 1000 || tc.SegmentBytes != 4096 || !tc.Compacts() || tc.Deletes() || tc.LogAppendTime ||
		tc.MinInsyncReplicas != 2 || tc.MaxMessageBytes != 1048588 {
		t.Errorf("ResolveTopic with overrides = %+v", tc)
	}
	// The broker's defaults are not modified by resolving a topic.
	if again := b.ResolveTopic(nil); !reflect.DeepEqual(again, want) {
		t.Errorf("defaults changed after resolving overrides: %+v", again)
	}

	defaults := b.TopicDefaults()
	if len(defaults) != len(topicKeys) || defaults["retention.ms"] != "600000" || defaults["segment.bytes"] != "1048576" ||
		defaults["cleanup.policy"] != "delete" || defaults["flush.ms"] != "9223372036854775807" || defaults["unclean.leader.election.enable"] != "false" {
		t.Errorf("TopicDefaults = %v", defaults)
	}
	// Every default must itself be a valid topic value.
	for k, v := range defaults {
		if err := ValidateTopicConfig(k, v); err != nil {
			t.Errorf("default %s=%q does not validate: %v", k, v, err)
		}
	}
}

func TestTopicEntries(t *testing.T) {
	b := mustNew(t, map[string]string{"log.retention.hours": "24"})
	entries := b.TopicEntries(map[string]string{"segment.bytes": "4096", "max.message.bytes": "x"})
	if len(entries) != len(topicKeys) {
		t.Fatalf("%d entries, want %d", len(entries), len(topicKeys))
	}
	byName := make(map[string]Entry)
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Errorf("not sorted at %s", e.Name)
		}
		if e.ReadOnly || e.Null {
			t.Errorf("%s: read-only %v null %v", e.Name, e.ReadOnly, e.Null)
		}
		byName[e.Name] = e
	}
	check := func(name, value string, source Source, synonyms []Synonym) {
		t.Helper()
		e := byName[name]
		if e.Value != value || e.Source != source || !reflect.DeepEqual(e.Synonyms, synonyms) {
			t.Errorf("%s = %q source %d synonyms %+v; want %q source %d synonyms %+v", name, e.Value, e.Source, e.Synonyms, value, source, synonyms)
		}
	}
	check("segment.bytes", "4096", SourceDynamicTopicConfig, []Synonym{
		{Name: "segment.bytes", Value: "4096", Source: SourceDynamicTopicConfig},
		{Name: "log.segment.bytes", Value: "1073741824", Source: SourceDefaultConfig},
	})
	check("retention.ms", "86400000", SourceStaticBrokerConfig, []Synonym{
		{Name: "log.retention.hours", Value: "24", Source: SourceStaticBrokerConfig},
		{Name: "log.retention.hours", Value: "168", Source: SourceDefaultConfig},
	})
	// An invalid stored override is reported at its effective (default) value.
	check("max.message.bytes", "1048588", SourceDefaultConfig, []Synonym{
		{Name: "message.max.bytes", Value: "1048588", Source: SourceDefaultConfig},
	})
	if e := byName["cleanup.policy"]; e.Type != TypeList {
		t.Errorf("cleanup.policy type %d", e.Type)
	}
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "orders", "my-topic_1.v2", "__consumer_offsets", "...", strings.Repeat("x", 249)} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("ValidateTopicName(%q) = %v", ok, err)
		}
	}
	for name, reason := range map[string]string{
		"":                       "empty",
		".":                      "not allowed",
		"..":                     "not allowed",
		strings.Repeat("x", 250): "250 characters",
		"has space":              "' '",
		"slash/name":             "'/'",
		"é":                      "'é'",
		"tab\t":                  `'\t'`,
		"a:b":                    "':'",
	} {
		err := ValidateTopicName(name)
		if !errors.Is(err, ErrInvalidTopicName) || !strings.Contains(err.Error(), reason) {
			t.Errorf("ValidateTopicName(%q) = %v, want ErrInvalidTopicName saying %s", name, err, reason)
		}
	}
	if TopicCollisionKey("a.b_c") != TopicCollisionKey("a_b.c") || TopicCollisionKey("a.b") == TopicCollisionKey("ab") {
		t.Error("TopicCollisionKey does not identify '.'/'_' collisions")
	}
}
