package config

import (
	"net"
	"net/url"
	"strconv"
)

// parseConsoleListener checks console.listener, http://host:port, and
// returns it with an empty host made 127.0.0.1: the console changes the
// cluster, so it is reachable from elsewhere only when configured so.
func parseConsoleListener(key, raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", invalid(key, raw, "want http://host:port")
	}
	if u.Scheme != "http" || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", invalid(key, raw, "want http://host:port")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", invalid(key, raw, "want http://host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", invalid(key, raw, "port must be 0-65535")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// ConsoleAddr is console.listener's host:port to bind ("" = no console).
func (b *Broker) ConsoleAddr() string {
	if b.ConsoleListener == "" {
		return ""
	}
	u, _ := url.Parse(b.ConsoleListener) // checked when parsed
	return u.Host
}
