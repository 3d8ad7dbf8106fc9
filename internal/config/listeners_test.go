package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseListeners(t *testing.T) {
	tests := []struct {
		in      string
		want    []Listener
		wantErr string
	}{
		{in: "PLAINTEXT://127.0.0.1:9092", want: []Listener{{"PLAINTEXT", "127.0.0.1", 9092}}},
		{in: "plaintext://:0, CONTROLLER://localhost:9093", want: []Listener{{"PLAINTEXT", "", 0}, {"CONTROLLER", "localhost", 9093}}},
		{in: "EXT://[::1]:9092,INT://[fe80::1%eth0]:9093", want: []Listener{{"EXT", "::1", 9092}, {"INT", "fe80::1%eth0", 9093}}},
		{in: "A://0.0.0.0:1,B://127.0.0.1:1", want: []Listener{{"A", "0.0.0.0", 1}, {"B", "127.0.0.1", 1}}},
		{in: "A://:0,B://:0", want: []Listener{{"A", "", 0}, {"B", "", 0}}},
		{in: "", want: nil},
		{in: "127.0.0.1:9092", wantErr: "not NAME://host:port"},
		{in: "PLAINTEXT://127.0.0.1", wantErr: "missing port"},
		{in: "PLAINTEXT://127.0.0.1:", wantErr: "port"},
		{in: "PLAINTEXT://127.0.0.1:http", wantErr: "port"},
		{in: "PLAINTEXT://127.0.0.1:65536", wantErr: "port"},
		{in: "PLAINTEXT://127.0.0.1:-1", wantErr: "port"},
		{in: "PLAINTEXT://127.0.0.1:+1", wantErr: "port"},
		{in: "://127.0.0.1:1", wantErr: "name"},
		{in: "PLAIN TEXT://h:1", wantErr: "name"},
		{in: "P://ho/st:1", wantErr: "not allowed"},
		{in: "P://::1:9092", wantErr: "host:port"},
		{in: "A://h:1,a://h:2", wantErr: "listener name A is used twice"},
		{in: "A://h:1,B://h:1", wantErr: "same port 1"},
		{in: "A://h:1,,B://h:2", wantErr: "not NAME://host:port"},
	}
	for _, tt := range tests {
		got, err := ParseListeners("listeners", tt.in, true)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "listeners") {
				t.Errorf("ParseListeners(%q) error = %v, want one naming listeners and saying %q", tt.in, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseListeners(%q) error does not wrap ErrInvalidConfig", tt.in)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseListeners(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	// Advertised listeners may share a port.
	if _, err := ParseListeners("advertised.listeners", "A://h:1,B://h:1", false); err != nil {
		t.Errorf("advertised listeners sharing a port: %v", err)
	}
}

func TestListenerFormatting(t *testing.T) {
	l := Listener{"EXT", "::1", 9092}
	if l.String() != "EXT://[::1]:9092" || l.Addr() != "[::1]:9092" {
		t.Errorf("String %q Addr %q", l.String(), l.Addr())
	}
	v := Voter{3, "h", 9093}
	if v.String() != "3@h:9093" {
		t.Errorf("voter String %q", v.String())
	}
}

func TestParseVoters(t *testing.T) {
	got, err := parseVoters("controller.quorum.voters", "1@a:9093, 2@[::1]:9094,3@c:0")
	want := []Voter{{1, "a", 9093}, {2, "::1", 9094}, {3, "c", 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseVoters = %v, %v; want %v", got, err, want)
	}
	for in, reason := range map[string]string{
		"a:9093":          "not id@host:port",
		"x@a:9093":        "not a non-negative integer",
		"-1@a:9093":       "not a non-negative integer",
		"1@:9093":         "host is required",
		"1@a":             "missing port",
		"1@a:1,1@b:2":     "listed twice",
		"99999999999@a:1": "not a non-negative integer",
	} {
		if _, err := parseVoters("controller.quorum.voters", in); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("parseVoters(%q) error = %v, want %q", in, err, reason)
		}
	}
}

func TestParseProtocolMap(t *testing.T) {
	got, err := parseProtocolMap("listener.security.protocol.map", "a:plaintext , B:PLAINTEXT")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"A": "PLAINTEXT", "B": "PLAINTEXT"}) {
		t.Errorf("parseProtocolMap = %v, %v", got, err)
	}
	for in, reason := range map[string]string{
		"A:PLAINTEXT,a:PLAINTEXT": "mapped twice",
		"A":                       "not LISTENER_NAME:SECURITY_PROTOCOL",
		":PLAINTEXT":              "not LISTENER_NAME:SECURITY_PROTOCOL",
		"A:SSL":                   "SSL (listener A) is not supported",
		"A:SASL_PLAINTEXT":        "not supported",
		"A:TLS":                   "unknown security protocol",
	} {
		_, err := parseProtocolMap("listener.security.protocol.map", in)
		if err == nil || !strings.Contains(err.Error(), reason) || !strings.Contains(err.Error(), "listener.security.protocol.map") {
			t.Errorf("parseProtocolMap(%q) error = %v, want %q naming the key", in, err, reason)
		}
	}
}

func FuzzParseListeners(f *testing.F) {
	for _, seed := range []string{
		"PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "A://:0", "EXT://[::1]:9092", "A://h:1,a://h:2",
		"x", "://:", "A://[::1:1", "A://h:99999", "1@a:9093,2@b:9094",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Whatever parses must format to a string that parses the same.
		if ls, err := ParseListeners("listeners", s, true); err == nil {
			again, err := ParseListeners("listeners", formatListeners(ls), true)
			if err != nil || !reflect.DeepEqual(again, ls) && len(ls) > 0 {
				t.Fatalf("listeners %q -> %v -> %q -> %v, %v", s, ls, formatListeners(ls), again, err)
			}
		}
		if vs, err := parseVoters("controller.quorum.voters", s); err == nil {
			again, err := parseVoters("controller.quorum.voters", formatVoters(vs))
			if err != nil || !reflect.DeepEqual(again, vs) && len(vs) > 0 {
				t.Fatalf("voters %q -> %v -> %q -> %v, %v", s, vs, formatVoters(vs), again, err)
			}
		}
		_, _ = parseProtocolMap("listener.security.protocol.map", s)
	})
}
