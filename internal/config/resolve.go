package config

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
)

// resolve fills in the values that depend on several keys and checks the
// keys against each other, as Kafka does at startup.
func (b *Broker) resolve() error {
	b.resolveSynonyms()
	if err := b.checkListeners(); err != nil {
		return err
	}
	if err := b.resolveAdvertised(); err != nil {
		return err
	}
	if err := b.checkNetLimits(); err != nil {
		return err
	}
	return b.resolveVoters()
}

// resolveSynonyms picks the effective value of keys given in several units
// or under two names; the more precise key wins, as in Kafka.
func (b *Broker) resolveSynonyms() {
	if !b.IsSet("log.dirs") {
		b.LogDirs = parseList(b.logDir)
	}
	if b.logRollMs != nil {
		b.LogRollMs = *b.logRollMs
	} else {
		b.LogRollMs = b.logRollHours * 3600_000
	}
	switch {
	case b.logRetentionMs != nil:
		b.LogRetentionMs = *b.logRetentionMs
	case b.logRetentionMinutes != nil:
		b.LogRetentionMs = *b.logRetentionMinutes * 60_000
	default:
		b.LogRetentionMs = b.logRetentionHours * 3600_000
	}
	if b.LogRetentionMs < 0 {
		b.LogRetentionMs = -1 // any negative value means unlimited
	}
	if b.logFlushIntervalMs != nil {
		b.LogFlushIntervalMs = *b.logFlushIntervalMs
	} else {
		b.LogFlushIntervalMs = b.LogFlushSchedulerIntervalMs
	}
}

func (b *Broker) checkListeners() error {
	for _, l := range b.Listeners {
		if _, ok := b.ProtocolMap[l.Name]; !ok {
			return invalid("listeners", b.rawOrDefault("listeners"), "listener %s has no entry in listener.security.protocol.map", l.Name)
		}
	}
	names := b.rawOrDefault("controller.listener.names")
	if b.HasRole("controller") {
		if len(b.ControllerListenerNames) == 0 {
			return invalid("controller.listener.names", names, "required when process.roles includes controller")
		}
		if _, ok := b.ControllerListener(); !ok {
			return invalid("controller.listener.names", names, "none of these names is in listeners, but process.roles includes controller")
		}
	} else {
		for _, n := range b.ControllerListenerNames {
			if slices.ContainsFunc(b.Listeners, func(l Listener) bool { return l.Name == n }) {
				return invalid("controller.listener.names", names, "listener %s is in listeners, but this node is not a controller", n)
			}
		}
	}
	if b.HasRole("broker") {
		ibl := strings.ToUpper(b.InterBrokerListenerName)
		b.InterBrokerListenerName = ibl
		raw := b.rawOrDefault("inter.broker.listener.name")
		if b.IsControllerListener(ibl) {
			return invalid("inter.broker.listener.name", raw, "%s is a controller listener", ibl)
		}
		if !slices.ContainsFunc(b.Listeners, func(l Listener) bool { return l.Name == ibl }) {
			return invalid("inter.broker.listener.name", raw, "no listener named %s in listeners", ibl)
		}
		if len(b.ClientListeners()) == 0 {
			return invalid("listeners", b.rawOrDefault("listeners"), "a broker needs a listener that is not a controller listener")
		}
	}
	return nil
}

// resolveAdvertised defaults advertised.listeners to the bound listeners
// minus the controller's, and checks explicit ones name bound listeners
// and real hosts.
func (b *Broker) resolveAdvertised() error {
	if len(b.AdvertisedListeners) == 0 {
		b.AdvertisedListeners = b.ClientListeners()
		return nil
	}
	raw := b.rawOrDefault("advertised.listeners")
	for _, a := range b.AdvertisedListeners {
		if !slices.ContainsFunc(b.Listeners, func(l Listener) bool { return l.Name == a.Name }) {
			return invalid("advertised.listeners", raw, "no listener named %s in listeners", a.Name)
		}
		if ip := net.ParseIP(a.Host); ip != nil && ip.IsUnspecified() {
			return invalid("advertised.listeners", raw, "cannot advertise the wildcard address %s", a.Host)
		}
	}
	return nil
}

// resolveVoters defaults controller.quorum.voters to this node alone, on
// its controller listener (loopback when that binds every interface); a
// port of 0 there means "whatever the controller listener binds".
func (b *Broker) resolveVoters() error {
	if !b.IsSet("controller.quorum.voters") || len(b.QuorumVoters) == 0 {
		cl, ok := b.ControllerListener()
		if !ok {
			return invalid("controller.quorum.voters", "", "required when process.roles has no controller")
		}
		host := cl.Host
		if isWildcardHost(host) {
			host = "127.0.0.1"
		}
		b.QuorumVoters = []Voter{{ID: b.NodeID, Host: host, Port: cl.Port}}
		return nil
	}
	// A controller that is not in the list is an observer: it follows the
	// metadata log until `weir cluster quorum add` makes it a voter
	// (KIP-853). The list then names the quorum to join.
	return nil
}

// rawOrDefault is the value of key as given, else its default, for error
// messages.
func (b *Broker) rawOrDefault(key string) string {
	if v, ok := b.explicit[key]; ok {
		return v
	}
	return brokerKeys[brokerKeyIndex[key]].def
}

func formatProtocolMap(b *Broker) string {
	names := make([]string, 0, len(b.ProtocolMap))
	for n := range b.ProtocolMap {
		names = append(names, n)
	}
	// Listener order first, then any other mapped names sorted.
	sort.SliceStable(names, func(i, j int) bool {
		pi, pj := b.listenerPos(names[i]), b.listenerPos(names[j])
		if pi != pj {
			return pi < pj
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%s", n, b.ProtocolMap[n])
	}
	return strings.Join(parts, ",")
}

func (b *Broker) listenerPos(name string) int {
	if i := slices.IndexFunc(b.Listeners, func(l Listener) bool { return l.Name == name }); i >= 0 {
		return i
	}
	return len(b.Listeners)
}
