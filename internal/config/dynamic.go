package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Dynamic broker configuration (Kafka's KIP-226): values set on a running
// cluster with kafka-configs --alter --entity-type brokers, kept in the
// metadata log, either for one broker or as the cluster-wide default. A
// broker's effective configuration is its static one (file, overrides)
// with the cluster default applied over it and its own dynamic values over
// that, key by key, exactly as if they had been in its server.properties
// (so log.retention.ms still wins over log.retention.hours, whatever level
// each comes from).
//
// weir changes at runtime what Kafka calls the broker-wide defaults of
// topic configs (log.retention.ms, log.segment.bytes, message.max.bytes,
// min.insync.replicas, ...): every topic without its own override takes
// the new value at once, and the reassignment throttle
// (replica.reassignment.throttle.bytes.per.sec). Every other broker key is
// read-only at runtime.

// ErrNotDynamic: the key is a broker config weir knows but cannot change
// on a running broker. The text is Kafka's message for the same refusal.
var ErrNotDynamic = errors.New("Cannot update these configs dynamically")

// notDynamic are the broker keys behind topic configs that weir still
// cannot change at runtime: the scheduler's interval is read once at start,
// and the controller decides unclean elections from its static default.
var notDynamic = map[string]bool{
	"log.flush.scheduler.interval.ms": true,
	"unclean.leader.election.enable":  true,
}

// dynamicBrokerOnly are the dynamic broker keys that are not topic
// defaults: read again by the broker at every metadata change.
var dynamicBrokerOnly = []string{"replica.reassignment.throttle.bytes.per.sec"}

// dynamicBrokerKeys is the set of broker keys that may be set dynamically.
// It is built once from the topic key table (and dynamicBrokerOnly) and
// never modified.
var dynamicBrokerKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range dynamicBrokerOnly {
		m[name] = true
	}
	for _, tk := range topicKeys {
		for _, name := range tk.brokerKeys {
			if !notDynamic[name] {
				m[name] = true
			}
		}
	}
	return m
}()

// IsDynamicBrokerKey reports whether key can be changed on a running
// broker (DescribeConfigs shows it as not read-only).
func IsDynamicBrokerKey(key string) bool { return dynamicBrokerKeys[key] }

// DynamicBrokerKeys lists the keys IsDynamicBrokerKey accepts, sorted.
func DynamicBrokerKeys() []string { return slices.Sorted(maps.Keys(dynamicBrokerKeys)) }

// ValidateDynamicBrokerConfig checks one value set on a broker resource:
// an unknown key wraps ErrUnknownConfig, a key that cannot change at
// runtime ErrNotDynamic, a bad value is a *ValueError (ErrInvalidConfig).
func ValidateDynamicBrokerConfig(key, value string) error {
	if !knownBrokerKey(key) {
		if tk, ok := findTopicKey(key); ok {
			return fmt.Errorf("%w %q: it is a topic-level key; the broker-wide default is %s", ErrUnknownConfig, key, tk.brokerKeys[0])
		}
		return unknownKey(key)
	}
	if !dynamicBrokerKeys[key] {
		return fmt.Errorf("%w: [%s]", ErrNotDynamic, key)
	}
	var scratch Broker
	return brokerKeys[brokerKeyIndex[key]].set(&scratch, value)
}

// WithDynamic returns b's effective configuration once the dynamic broker
// configs are applied: clusterDefaults (the "" resource) over b's static
// values, perBroker over both. A value that is no longer valid (written by
// a version with other rules) is skipped and reported in the error, and
// the rest still applies; the result is never nil. b itself is unchanged.
func (b *Broker) WithDynamic(clusterDefaults, perBroker map[string]string) (*Broker, error) {
	st := b.staticConfig()
	if len(clusterDefaults) == 0 && len(perBroker) == 0 {
		return st, nil
	}
	props := maps.Clone(st.explicit)
	var errs []error
	apply := func(src map[string]string) map[string]string {
		applied := map[string]string{}
		for _, k := range sortedKeys(src) {
			if err := ValidateDynamicBrokerConfig(k, src[k]); err != nil {
				errs = append(errs, err)
				continue
			}
			props[k], applied[k] = src[k], src[k]
		}
		return applied
	}
	dynDefault := apply(clusterDefaults)
	dynBroker := apply(perBroker)
	nb, _, err := New(props)
	if err != nil {
		return st, errors.Join(append(errs, err)...)
	}
	// IsSet and the STATIC_BROKER_CONFIG source keep meaning the file and
	// the overrides.
	nb.explicit = st.explicit
	nb.static, nb.dynDefault, nb.dynBroker = st, dynDefault, dynBroker
	return nb, errors.Join(errs...)
}

// staticConfig is the configuration from the file and overrides alone.
func (b *Broker) staticConfig() *Broker {
	if b.static != nil {
		return b.static
	}
	return b
}

// keySynonyms lists where k's value can come from, most preferred first:
// set on this broker at runtime, the cluster-wide runtime default, the
// file or an override, the default.
func (b *Broker) keySynonyms(k brokerKey) []Synonym {
	var out []Synonym
	if v, ok := b.dynBroker[k.name]; ok {
		out = append(out, Synonym{Name: k.name, Value: v, Source: SourceDynamicBrokerConfig})
	}
	if v, ok := b.dynDefault[k.name]; ok {
		out = append(out, Synonym{Name: k.name, Value: v, Source: SourceDynamicDefaultBrokerConfig})
	}
	if st := b.staticConfig(); st.IsSet(k.name) {
		v, ok := k.get(st)
		out = append(out, Synonym{Name: k.name, Value: v, Null: !ok, Source: SourceStaticBrokerConfig})
	}
	if !k.null {
		out = append(out, Synonym{Name: k.name, Value: k.def, Source: SourceDefaultConfig})
	}
	return out
}

// DefaultEntries lists the cluster-wide dynamic defaults (DescribeConfigs
// on the broker resource "", which in Kafka shows only those), sorted.
func (b *Broker) DefaultEntries() []Entry {
	out := make([]Entry, 0, len(b.dynDefault))
	for name, v := range b.dynDefault {
		k := brokerKeys[brokerKeyIndex[name]]
		s := Synonym{Name: name, Value: v, Source: SourceDynamicDefaultBrokerConfig}
		out = append(out, Entry{
			Name: name, Value: v, Source: s.Source, Type: k.typ, Doc: k.doc, Synonyms: []Synonym{s},
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
