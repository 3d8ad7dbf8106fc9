package config

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// parseHostCounts parses "host:count,host:count" (Kafka's format for
// max.connections.per.ip.overrides). The count follows the last colon, so
// that IPv6 addresses work too.
func parseHostCounts(key, raw string) (map[string]int32, error) {
	m := map[string]int32{}
	for _, item := range parseList(raw) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return nil, invalid(key, raw, "entry %q is not host:count", item)
		}
		host := strings.Trim(strings.TrimSpace(item[:i]), "[]")
		n, err := strconv.ParseInt(strings.TrimSpace(item[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, invalid(key, raw, "entry %q: the count must be a number from 0 to %d", item, math.MaxInt32)
		}
		if host == "" {
			return nil, invalid(key, raw, "entry %q has no host", item)
		}
		if _, dup := m[host]; dup {
			return nil, invalid(key, raw, "host %s is listed twice", host)
		}
		m[host] = int32(n)
	}
	return m, nil
}

func formatHostCounts(m map[string]int32) string {
	hosts := make([]string, 0, len(m))
	for h := range m {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		if strings.Contains(h, ":") {
			parts[i] = "[" + h + "]:" + strconv.Itoa(int(m[h]))
		} else {
			parts[i] = h + ":" + strconv.Itoa(int(m[h]))
		}
	}
	return strings.Join(parts, ",")
}

// checkNetLimits checks the limit keys against each other, as Kafka does.
func (b *Broker) checkNetLimits() error {
	if b.MaxConnectionsPerIP == 0 && len(b.MaxConnectionsPerIPOverrides) == 0 {
		return invalid("max.connections.per.ip", b.rawOrDefault("max.connections.per.ip"),
			"can be set to zero only if max.connections.per.ip.overrides is set")
	}
	return nil
}
