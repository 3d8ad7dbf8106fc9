package config

import "sort"

// Source says where a value comes from, numbered as Kafka's ConfigSource
// in DescribeConfigs v1+ (kmsg.ConfigSource), so the broker can cast it.
type Source int8

// Kafka's ConfigSource values. weir has no dynamic broker configs, so it
// uses only DynamicTopicConfig, StaticBrokerConfig and DefaultConfig.
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
	ReadOnly  bool // true for every broker key: nothing is dynamic in weir
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

// Entries lists every broker key with its current value, sorted by name:
// STATIC_BROKER_CONFIG when given in the file or an override, else
// DEFAULT_CONFIG. Keys that only refine a synonym and were not given
// (log.retention.ms, log.roll.ms, ...) are null, as in Kafka; derived
// lists (advertised.listeners, controller.quorum.voters, log.dirs) show
// their effective value.
func (b *Broker) Entries() []Entry {
	out := make([]Entry, 0, len(brokerKeys))
	for _, k := range brokerKeys {
		value, ok := k.get(b)
		e := Entry{
			Name: k.name, Value: value, Null: !ok, Source: SourceDefaultConfig,
			ReadOnly: true, Type: k.typ, Doc: k.doc,
		}
		if b.IsSet(k.name) {
			e.Source = SourceStaticBrokerConfig
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.name, Value: value, Null: !ok, Source: SourceStaticBrokerConfig})
		}
		if !k.null {
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.name, Value: k.def, Source: SourceDefaultConfig})
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// brokerSynonyms lists the broker keys behind a topic key: those given
// explicitly (with their values), and separately their defaults.
func (b *Broker) brokerSynonyms(keys []string) (set, defaults []Synonym) {
	for _, name := range keys {
		k := brokerKeys[brokerKeyIndex[name]]
		if b.IsSet(name) {
			v, ok := k.get(b)
			set = append(set, Synonym{Name: name, Value: v, Null: !ok, Source: SourceStaticBrokerConfig})
		}
		if !k.null {
			defaults = append(defaults, Synonym{Name: name, Value: k.def, Source: SourceDefaultConfig})
		}
	}
	return set, defaults
}
