package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// parseMetricsListener checks metrics.listener: empty (off) or
// http://host:port with nothing else, so that a typo fails at start
// rather than serving somewhere unexpected.
func parseMetricsListener(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("metrics.listener=%q: %w", raw, err)
	}
	if u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("metrics.listener=%q: want http://host:port", raw)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", fmt.Errorf("metrics.listener=%q: want http://host:port: %w", raw, err)
	}
	return "http://" + u.Host, nil
}

// MetricsAddr is the host:port metrics.listener binds ("" = off).
func (b *Broker) MetricsAddr() string {
	return strings.TrimPrefix(b.MetricsListener, "http://")
}
