package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners:
// NAME://host:port. Names are upper-cased, as Kafka normalises them.
type Listener struct {
	Name string // e.g. PLAINTEXT, CONTROLLER
	Host string // "" binds every interface
	Port int    // 0 lets the kernel pick (bound listeners only)
}

// Addr is host:port for net.Listen / net.Dial.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String is the listener in Kafka's notation, NAME://host:port.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Voter is one entry of controller.quorum.voters: id@host:port.
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr is host:port of the voter's controller listener.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

// String is the voter in Kafka's notation, id@host:port.
func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

// Security protocols Kafka knows; weir speaks only PLAINTEXT.
var knownProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// ParseListeners parses a comma-separated listener list such as
// "PLAINTEXT://127.0.0.1:9092,CONTROLLER://:9093" given for key. Names must
// be unique; with distinctPorts, two listeners may not share a non-zero
// port on the same host (Kafka's rule for bound listeners; advertised ones
// may share).
func ParseListeners(key, s string, distinctPorts bool) ([]Listener, error) {
	var out []Listener
	for _, item := range parseList(s) {
		l, err := parseListener(item)
		if err != nil {
			return nil, invalid(key, s, "%v", err)
		}
		for _, prev := range out {
			if prev.Name == l.Name {
				return nil, invalid(key, s, "listener name %s is used twice", l.Name)
			}
			if distinctPorts && l.Port != 0 && prev.Port == l.Port && prev.Host == l.Host {
				return nil, invalid(key, s, "listeners %s and %s use the same port %d", prev.Name, l.Name, l.Port)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

func parseListener(s string) (Listener, error) {
	name, hostPort, ok := strings.Cut(s, "://")
	if !ok {
		return Listener{}, fmt.Errorf("listener %q is not NAME://host:port", s)
	}
	if !validListenerName(name) {
		return Listener{}, fmt.Errorf("listener %q: name %q must be letters, digits, '_' or '-'", s, name)
	}
	host, port, err := splitHostPort(hostPort)
	if err != nil {
		return Listener{}, fmt.Errorf("listener %q: %w", s, err)
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: port}, nil
}

func validListenerName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// splitHostPort splits host:port ([v6]:port for IPv6), requiring a port
// in 0..65535 and a host made of the characters Kafka accepts.
func splitHostPort(s string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("want host:port: %w", err)
	}
	for _, c := range host {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-%._:", c)) {
			return "", 0, fmt.Errorf("host %q has a character %q not allowed in a host name", host, c)
		}
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 || portStr[0] == '+' {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", portStr)
	}
	return host, port, nil
}

// parseProtocolMap parses listener.security.protocol.map, "NAME:PROTOCOL,...",
// upper-casing both sides. Any protocol but PLAINTEXT is refused: weir has
// no TLS or SASL.
func parseProtocolMap(key, s string) (map[string]string, error) {
	m := make(map[string]string)
	for _, item := range parseList(s) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !validListenerName(name) {
			return nil, invalid(key, s, "entry %q is not LISTENER_NAME:SECURITY_PROTOCOL", item)
		}
		if _, dup := m[name]; dup {
			return nil, invalid(key, s, "listener name %s is mapped twice", name)
		}
		if !slices.Contains(knownProtocols, proto) {
			return nil, invalid(key, s, "unknown security protocol %q for listener %s", proto, name)
		}
		if proto != "PLAINTEXT" {
			return nil, invalid(key, s, "security protocol %s (listener %s) is not supported: weir speaks only PLAINTEXT", proto, name)
		}
		m[name] = proto
	}
	return m, nil
}

// parseVoters parses controller.quorum.voters, "id@host:port,...".
func parseVoters(key, s string) ([]Voter, error) {
	var out []Voter
	for _, item := range parseList(s) {
		idStr, hostPort, ok := strings.Cut(item, "@")
		if !ok {
			return nil, invalid(key, s, "voter %q is not id@host:port", item)
		}
		id, err := strconv.ParseInt(idStr, 10, 32)
		if err != nil || id < 0 {
			return nil, invalid(key, s, "voter %q: id %q is not a non-negative integer", item, idStr)
		}
		host, port, err := splitHostPort(hostPort)
		if err != nil {
			return nil, invalid(key, s, "voter %q: %v", item, err)
		}
		if host == "" {
			return nil, invalid(key, s, "voter %q: a host is required", item)
		}
		for _, prev := range out {
			if prev.ID == int32(id) {
				return nil, invalid(key, s, "voter id %d is listed twice", id)
			}
		}
		out = append(out, Voter{ID: int32(id), Host: host, Port: port})
	}
	return out, nil
}

func formatListeners(ls []Listener) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, ",")
}

func formatVoters(vs []Voter) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, ",")
}
