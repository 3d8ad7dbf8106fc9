package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceListedFromV0ButOldVersionsRefused checks Kafka 4.0's
// librdkafka workaround: ApiVersions lists Produce from v0, yet a Produce
// below the handler's real minimum (v3 here) is still refused, by closing
// the connection, and the handler never sees it.
func TestProduceListedFromV0ButOldVersionsRefused(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrApiVersionsRequest(), 3, 1, strp("client")))
	_, body := readResponse(t, c)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			listed = true
			if k.MinVersion != 0 || k.MaxVersion != testAPIs[0][1] {
				t.Fatalf("Produce listed as v%d-v%d, want v0-v%d", k.MinVersion, k.MaxVersion, testAPIs[0][1])
			}
		}
	}
	if !listed {
		t.Fatal("Produce not listed")
	}

	req := kmsg.NewPtrProduceRequest()
	req.Acks = 1
	send(t, c, encodeRequest(req, 2, 2, strp("client")))
	expectClosed(t, c)
	if n := ts.h.count(0); n != 0 {
		t.Fatalf("handler saw %d Produce requests below its minimum", n)
	}
	expectServing(t, ts.addr)
}
