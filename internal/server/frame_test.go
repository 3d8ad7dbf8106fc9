package server

import (
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitUntil polls cond until it holds or waitLimit passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// produceHead is the start of a Produce v9 frame claiming size bytes: the
// size prefix, header v2 and a body up to the records of its one
// partition, which claim records bytes.
func produceHead(size, records int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = append(b, 0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0) // key, version, corr, null client id, no tags
	b = append(b, 0, 0, 1, 0, 0, 0x75, 0x30, 2, 2, 't', 2, 0, 0, 0, 0)
	return binary.AppendUvarint(b, uint64(records+1))
}

func TestNonProduceFrameCapped(t *testing.T) {
	ts := startServer(t, newTestHandler(), func(cfg *Config) { cfg.MaxNonProduceRequestBytes = 1024 })
	c := dial(t, ts.addr)
	// A Metadata frame claiming 1 MiB: refused on its API key, the body
	// never sent.
	send(t, c, binary.BigEndian.AppendUint32(nil, 1<<20), []byte{0, 3, 0, 12})
	expectClosed(t, c)
	// Produce may be larger: the same claim is read on.
	p := dial(t, ts.addr)
	send(t, p, produceHead(1<<20, 1<<20-64))
	waitUntil(t, "the Produce frame's first bytes charged", func() bool { return ts.srv.pool.inUse() > 0 })
	expectServing(t, ts.addr)
}

func TestClaimChargesOnlyArrivedBytes(t *testing.T) {
	ts := startServer(t, newTestHandler(), nil)
	c := dial(t, ts.addr)
	send(t, c, produceHead(100<<20, 100<<20-64))
	waitUntil(t, "the frame's first chunk charged", func() bool { return ts.srv.pool.inUse() > 0 })
	if got := ts.srv.pool.inUse(); got > minChunk {
		t.Fatalf("a 100 MiB claim with 30 bytes sent holds %d bytes", got)
	}
	c.Close()
	waitUntil(t, "the claim's memory returned", func() bool { return ts.srv.pool.inUse() == 0 })
}

// With the budget used up by a partial frame (which holds the overdraft),
// other connections are not read until it completes; then all are served
// and every byte is returned.
func TestReadingPausesWhenBudgetUsed(t *testing.T) {
	ts := startServer(t, newTestHandler(), func(cfg *Config) { cfg.QueuedMaxRequestBytes = 64 << 10 })
	const records = 256 << 10
	head := produceHead(0, records)
	size := len(head) - 4 + records + 3
	binary.BigEndian.PutUint32(head, uint32(size))
	a := dial(t, ts.addr)
	send(t, a, head, make([]byte, records/2))
	waitUntil(t, "the partial frame to take the overdraft", func() bool {
		ts.srv.pool.mu.Lock()
		defer ts.srv.pool.mu.Unlock()
		return ts.srv.pool.overdraft != nil && ts.srv.pool.used >= records/2
	})
	b := dial(t, ts.addr)
	send(t, b, encodeRequest(kmsg.NewPtrMetadataRequest(), 12, 7, nil))
	answered := make(chan int32, 1)
	go func() {
		// Not readResponse: it may not fail the test from here.
		b.SetReadDeadline(time.Now().Add(waitLimit))
		var head [8]byte
		if _, err := io.ReadFull(b, head[:]); err != nil {
			answered <- -1
			return
		}
		answered <- int32(binary.BigEndian.Uint32(head[4:]))
	}()
	select {
	case corr := <-answered:
		t.Fatalf("request %d answered while the budget was used up", corr)
	case <-time.After(200 * time.Millisecond): // bounded check: fails only if read
	}
	send(t, a, make([]byte, records-records/2), []byte{0, 0, 0})
	if corr, _ := readResponse(t, a); corr != 1 {
		t.Fatalf("produce answered with correlation id %d", corr)
	}
	select {
	case corr := <-answered:
		if corr != 7 {
			t.Fatalf("metadata answered with correlation id %d", corr)
		}
	case <-time.After(waitLimit):
		t.Fatal("waiting connection not served after memory was returned")
	}
	waitUntil(t, "every byte returned", func() bool { return ts.srv.pool.inUse() == 0 })
}

func TestTrickledFrameCut(t *testing.T) {
	ts := startServer(t, newTestHandler(), func(cfg *Config) {
		cfg.TransferTimeout = 300 * time.Millisecond
		cfg.TransferMinRate = 1 << 20
	})
	c := dial(t, ts.addr)
	send(t, c, produceHead(1<<20, 1<<20-64))
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.Write([]byte{0})
			}
		}
	}()
	expectClosed(t, c)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("cut after %v, before the 300ms timeout", d)
	}
	waitUntil(t, "the trickler's memory returned", func() bool { return ts.srv.pool.inUse() == 0 })
	expectServing(t, ts.addr)
}

func TestDecodedSizeCountsTags(t *testing.T) {
	m := kmsg.NewPtrMetadataRequest()
	m.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("abc")}}
	for k := range 100 {
		m.UnknownTags.Set(uint32(k), nil)
	}
	got := decodedSize(m)
	if got < 100*tagCost {
		t.Fatalf("decodedSize %d, want at least %d for 100 tags", got, 100*tagCost)
	}
	if plain := decodedSize(kmsg.NewPtrMetadataRequest()); plain >= 1024 {
		t.Fatalf("empty Metadata request sized %d", plain)
	}
}
