package server

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkRoundTrip measures one request/response at a time over
// loopback: the latency cost of the connection loop per request.
func BenchmarkRoundTrip(b *testing.B) {
	ts := startServer(b, newTestHandler(), nil)
	c := dial(b, ts.addr)
	frame := encodeRequest(kmsg.NewPtrMetadataRequest(), 12, 1, strp("bench"))
	b.ResetTimer()
	for b.Loop() {
		send(b, c, frame)
		readResponse(b, c)
	}
}

// BenchmarkPipelinedProduce measures throughput with 100 requests in
// flight, each a Produce carrying a 1 KiB record batch.
func BenchmarkPipelinedProduce(b *testing.B) {
	ts := startServer(b, newTestHandler(), nil)
	c := dial(b, ts.addr)
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 1
	p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: bytes.Repeat([]byte{1}, 1024)}}}}
	frame := encodeRequest(p, 9, 1, strp("bench"))
	const depth = 100
	batch := bytes.Repeat(frame, depth)
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		send(b, c, batch)
		for range depth {
			readResponse(b, c)
		}
	}
}

// BenchmarkParseProduce measures header parsing and kmsg decoding of a
// Produce request with a 16 KiB batch.
func BenchmarkParseProduce(b *testing.B) {
	vt, err := newVersionTable(testAPIs)
	if err != nil {
		b.Fatal(err)
	}
	p := kmsg.NewPtrProduceRequest()
	p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: bytes.Repeat([]byte{1}, 16<<10)}}}}
	frame := encodeRequest(p, 9, 1, strp("bench"))[4:]
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if r := parseRequest(frame, vt); r.err != nil {
			b.Fatal(r.err)
		}
	}
}
