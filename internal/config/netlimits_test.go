package config

import (
	"errors"
	"maps"
	"testing"
)

func TestNetLimitDefaults(t *testing.T) {
	b := Default()
	if b.QueuedMaxRequestBytes != 256<<20 || b.MaxConnections != 1<<31-1 || b.MaxConnectionsPerIP != 1<<31-1 ||
		len(b.MaxConnectionsPerIPOverrides) != 0 || b.RequestMaxBytesNonProduce != 4<<20 ||
		b.TransferTimeoutMs != 30000 || b.TransferMinBytesPerSecond != 1<<20 {
		t.Fatalf("defaults: %+v", b)
	}
}

func TestMaxConnectionsPerIPOverrides(t *testing.T) {
	b, _, err := New(map[string]string{
		"max.connections.per.ip":           "0",
		"max.connections.per.ip.overrides": " hostName:100 , 127.0.0.1:200,[::1]:3,fe80::1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int32{"hostName": 100, "127.0.0.1": 200, "::1": 3, "fe80::1": 0}
	if !maps.Equal(b.MaxConnectionsPerIPOverrides, want) {
		t.Fatalf("overrides %v, want %v", b.MaxConnectionsPerIPOverrides, want)
	}
	if got := formatHostCounts(b.MaxConnectionsPerIPOverrides); got != "127.0.0.1:200,[::1]:3,[fe80::1]:0,hostName:100" {
		t.Fatalf("rendered %q", got)
	}
	for name, props := range map[string]map[string]string{
		"per ip 0 without overrides": {"max.connections.per.ip": "0"},
		"no count":                   {"max.connections.per.ip.overrides": "host"},
		"bad count":                  {"max.connections.per.ip.overrides": "host:x"},
		"negative count":             {"max.connections.per.ip.overrides": "host:-1"},
		"no host":                    {"max.connections.per.ip.overrides": ":5"},
		"duplicate":                  {"max.connections.per.ip.overrides": "a:1,a:2"},
		"negative max.connections":   {"max.connections": "-1"},
		"zero non-produce cap":       {"weir.request.max.bytes.non.produce": "0"},
	} {
		var ve *ValueError
		if _, _, err := New(props); !errors.As(err, &ve) {
			t.Errorf("%s: %v, want a ValueError", name, err)
		}
	}
}
