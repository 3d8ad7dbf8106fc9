package server

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzGoClient drives the server with a real franz-go client. Its
// first ApiVersions asks for a newer version than the v3 we allow, so it
// must go through the KIP-511 fallback and retry.
func TestFranzGoClient(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	client, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ClientID("weir-test"))
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, client)
	if err != nil {
		t.Fatalf("ApiVersions through kgo: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error code %d", resp.ErrorCode)
	}
	if resp.Version != 3 {
		t.Errorf("kgo used ApiVersions v%d, want v3 (our max)", resp.Version)
	}
	got := make(map[int16][2]int16)
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for key, want := range testAPIs {
		want[0] = advertisedMin(key, want[0])
		if got[key] != want {
			t.Errorf("API %d: range %v, want %v", key, got[key], want)
		}
	}

	// A handler-served request through the same client.
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, client)
	if err != nil {
		t.Fatalf("Metadata through kgo: %v", err)
	}
	if meta.Version != 12 {
		t.Errorf("kgo used Metadata v%d, want v12 (our max)", meta.Version)
	}
	if n := ts.h.count(3); n < 1 {
		t.Errorf("handler saw %d Metadata requests", n)
	}
}
