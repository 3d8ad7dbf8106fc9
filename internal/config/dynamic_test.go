package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestValidateDynamicBrokerConfig(t *testing.T) {
	for _, c := range []struct {
		key, value string
		want       error
		text       string
	}{
		{"log.retention.ms", "3600000", nil, ""},
		{"log.cleanup.policy", "compact,delete", nil, ""},
		{"min.insync.replicas", "2", nil, ""},
		{"log.retention.ms", "soon", ErrInvalidConfig, "soon"},
		{"min.insync.replicas", "0", ErrInvalidConfig, "min.insync.replicas"},
		{"log.dirs", "/x", ErrNotDynamic, "Cannot update these configs dynamically: [log.dirs]"},
		{"unclean.leader.election.enable", "true", ErrNotDynamic, "[unclean.leader.election.enable]"},
		{"no.such.key", "1", ErrUnknownConfig, `"no.such.key"`},
		{"retention.ms", "1", ErrUnknownConfig, "topic-level key; the broker-wide default is log.retention.ms"},
	} {
		err := ValidateDynamicBrokerConfig(c.key, c.value)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(fmt.Sprint(err), c.text) {
			t.Errorf("ValidateDynamicBrokerConfig(%s, %s) = %v, want %v mentioning %q", c.key, c.value, err, c.want, c.text)
		}
	}
}

func TestWithDynamic(t *testing.T) {
	st := mustNew(t, map[string]string{"log.segment.bytes": "2097152", "log.retention.hours": "2", "num.partitions": "3"})
	eff, err := st.WithDynamic(
		map[string]string{"log.retention.ms": "1000", "message.max.bytes": "5000"},
		map[string]string{"message.max.bytes": "6000", "log.dirs": "/elsewhere"},
	)
	if !errors.Is(err, ErrNotDynamic) {
		t.Errorf("WithDynamic error = %v, want the skipped log.dirs reported", err)
	}
	if eff.LogRetentionMs != 1000 || eff.MessageMaxBytes != 6000 || eff.LogSegmentBytes != 2097152 || eff.NumPartitions != 3 {
		t.Errorf("effective: retention %d, message.max.bytes %d, segment %d, partitions %d",
			eff.LogRetentionMs, eff.MessageMaxBytes, eff.LogSegmentBytes, eff.NumPartitions)
	}
	if st.MessageMaxBytes != 1048588 || st.LogRetentionMs != 2*3600_000 {
		t.Error("WithDynamic changed the static configuration")
	}
	if eff.LogDirs[0] == "/elsewhere" || eff.IsSet("message.max.bytes") || !eff.IsSet("log.segment.bytes") {
		t.Errorf("effective log.dirs %v, IsSet wrong", eff.LogDirs)
	}

	entries := map[string]Entry{}
	for _, e := range eff.Entries() {
		entries[e.Name] = e
	}
	syn := func(e Entry) string {
		var parts []string
		for _, s := range e.Synonyms {
			parts = append(parts, fmt.Sprintf("%d:%s=%s", s.Source, s.Name, s.Value))
		}
		return strings.Join(parts, ",")
	}
	for name, want := range map[string]struct {
		value    string
		source   Source
		readOnly bool
		synonyms string
	}{
		"message.max.bytes":   {"6000", SourceDynamicBrokerConfig, false, "2:message.max.bytes=6000,3:message.max.bytes=5000,5:message.max.bytes=1048588"},
		"log.retention.ms":    {"1000", SourceDynamicDefaultBrokerConfig, false, "3:log.retention.ms=1000"},
		"log.segment.bytes":   {"2097152", SourceStaticBrokerConfig, false, "4:log.segment.bytes=2097152,5:log.segment.bytes=1073741824"},
		"num.partitions":      {"3", SourceStaticBrokerConfig, true, "4:num.partitions=3,5:num.partitions=1"},
		"log.dirs":            {st.LogDirs[0], SourceDefaultConfig, true, ""},
		"log.retention.hours": {"2", SourceStaticBrokerConfig, false, "4:log.retention.hours=2,5:log.retention.hours=168"},
	} {
		e := entries[name]
		if e.Value != want.value || e.Source != want.source || e.ReadOnly != want.readOnly || syn(e) != want.synonyms {
			t.Errorf("entry %s = %q source %d read-only %v synonyms %s; want %+v", name, e.Value, e.Source, e.ReadOnly, syn(e), want)
		}
	}

	// A topic without overrides takes the dynamic values, and says so.
	topic := map[string]Entry{}
	for _, e := range eff.TopicEntries(map[string]string{"segment.bytes": "1048576"}) {
		topic[e.Name] = e
	}
	for name, want := range map[string]struct {
		value    string
		source   Source
		synonyms string
	}{
		"retention.ms":      {"1000", SourceDynamicDefaultBrokerConfig, "3:log.retention.ms=1000,4:log.retention.hours=2,5:log.retention.hours=168"},
		"max.message.bytes": {"6000", SourceDynamicBrokerConfig, "2:message.max.bytes=6000,3:message.max.bytes=5000,5:message.max.bytes=1048588"},
		"segment.bytes":     {"1048576", SourceDynamicTopicConfig, "1:segment.bytes=1048576,4:log.segment.bytes=2097152,5:log.segment.bytes=1073741824"},
	} {
		e := topic[name]
		if e.Value != want.value || e.Source != want.source || syn(e) != want.synonyms {
			t.Errorf("topic entry %s = %q source %d synonyms %s; want %+v", name, e.Value, e.Source, syn(e), want)
		}
	}
	if tc := eff.ResolveTopic(nil); tc.RetentionMs != 1000 || tc.MaxMessageBytes != 6000 {
		t.Errorf("ResolveTopic: retention %d, max message %d", tc.RetentionMs, tc.MaxMessageBytes)
	}

	defaults := eff.DefaultEntries()
	if len(defaults) != 2 || defaults[0].Name != "log.retention.ms" || defaults[1].Name != "message.max.bytes" ||
		defaults[1].Value != "5000" || defaults[1].Source != SourceDynamicDefaultBrokerConfig || defaults[1].ReadOnly {
		t.Errorf("DefaultEntries = %+v", defaults)
	}
	if len(st.DefaultEntries()) != 0 {
		t.Error("the static configuration has cluster defaults")
	}
}

// TestWithDynamicKeepsPrecedence: a dynamic value in a less precise unit
// does not beat a static one in a more precise unit, as in Kafka, where
// dynamic values are simply merged into the broker's properties.
func TestWithDynamicKeepsPrecedence(t *testing.T) {
	st := mustNew(t, map[string]string{"log.retention.ms": "5000"})
	eff, err := st.WithDynamic(map[string]string{"log.retention.hours": "1"}, nil)
	if err != nil || eff.LogRetentionMs != 5000 {
		t.Errorf("retention %d, err %v; want 5000 (log.retention.ms wins)", eff.LogRetentionMs, err)
	}
	eff, err = st.WithDynamic(map[string]string{"log.retention.ms": "7000"}, map[string]string{"log.retention.ms": "9000"})
	if err != nil || eff.LogRetentionMs != 9000 {
		t.Errorf("retention %d, err %v; want 9000 (this broker's value wins)", eff.LogRetentionMs, err)
	}
	if same, _ := st.WithDynamic(nil, nil); same != st {
		t.Error("WithDynamic without dynamic values is not the static configuration")
	}
	again, _ := eff.WithDynamic(nil, map[string]string{"log.retention.ms": "1"})
	if again.LogRetentionMs != 1 || again.staticConfig() != st {
		t.Error("WithDynamic on an effective configuration does not start from the static one")
	}
}
