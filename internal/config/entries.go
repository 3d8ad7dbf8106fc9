package config

import (
	"slices"
	"sort"
)

// Source says where a value comes from, numbered as Kafka's ConfigSource
// in DescribeConfigs v1+ (kmsg.ConfigSource), so the broker can cast it.
type Source int8

// Kafka's ConfigSource values.
const (
	SourceUnknown                    Source = 0
	SourceDynamicTopicConfig         Source = 1
	SourceDynamicBrokerConfig        Source = 2
	SourceDynamicDefaultBrokerConfig Source = 3
	SourceStaticBrokerConfig         Source = 4
	SourceDefaultConfig              Source = 5
)

// Entry is one configuration as DescribeConfigs reports it.
type Entry struct {
	Name      string
	Value     string
	Null      bool // no value: send a null string (Value is "")
	Source    Source
	ReadOnly  bool // a broker key that cannot change at runtime (IsDynamicBrokerKey)
	Sensitive bool // never true today: weir has no passwords
	Type      Type
	Doc       string
	// Synonyms lists where the value could come from, most to least
	// preferred (DescribeConfigs IncludeSynonyms): the entry's own source
	// first, then broker-level keys, set ones before defaults.
	Synonyms []Synonym
}

// Synonym is one source of an Entry's value.
type Synonym struct {
	Name   string
	Value  string
	Null   bool
	Source Source
}

// Entries lists every broker key with its current value, sorted by name,
// and where the value comes from: DYNAMIC_BROKER_CONFIG when set on this
// broker at runtime, DYNAMIC_DEFAULT_BROKER_CONFIG when set cluster-wide
// at runtime, STATIC_BROKER_CONFIG when given in the file or an override,
// else DEFAULT_CONFIG. Keys that only refine a synonym and were not given
// (log.retention.ms, log.roll.ms, ...) are null, as in Kafka; derived
// lists (advertised.listeners, controller.quorum.voters, log.dirs) show
// their effective value.
func (b *Broker) Entries() []Entry {
	out := make([]Entry, 0, len(brokerKeys))
	for _, k := range brokerKeys {
		value, ok := k.get(b)
		e := Entry{
			Name: k.name, Value: value, Null: !ok, Source: SourceDefaultConfig,
			ReadOnly: !dynamicBrokerKeys[k.name], Type: k.typ, Doc: k.doc,
			Synonyms: b.keySynonyms(k),
		}
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// brokerSynonyms lists the broker keys behind a topic key with their
// values, level by level (dynamic on this broker, dynamic cluster-wide,
// static, default), each level in the keys' order of precedence.
func (b *Broker) brokerSynonyms(keys []string) []Synonym {
	var levels [4][]Synonym
	for _, name := range keys {
		for _, s := range b.keySynonyms(brokerKeys[brokerKeyIndex[name]]) {
			i := brokerLevel(s.Source)
			levels[i] = append(levels[i], s)
		}
	}
	return slices.Concat(levels[:]...)
}

// brokerLevel ranks the sources of a broker value, most preferred first.
func brokerLevel(s Source) int {
	switch s {
	case SourceDynamicBrokerConfig:
		return 0
	case SourceDynamicDefaultBrokerConfig:
		return 1
	case SourceStaticBrokerConfig:
		return 2
	}
	return 3
}
