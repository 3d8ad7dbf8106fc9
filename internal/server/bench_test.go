package server

import (
	"bufio"
	"bytes"
	"context"
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

// bigProduceFrame is a Produce v9 request frame with parts partitions of
// size bytes of records each, as an idempotent producer sends (franz-go:
// one batch of up to 1 MiB per partition).
func bigProduceFrame(parts, size int) []byte {
	p := kmsg.NewPtrProduceRequest()
	p.Acks = -1
	t := kmsg.ProduceRequestTopic{Topic: "bench"}
	for i := range parts {
		t.Partitions = append(t.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(i), Records: bytes.Repeat([]byte{byte(i)}, size)})
	}
	p.Topics = []kmsg.ProduceRequestTopic{t}
	return encodeRequest(p, 9, 1, strp("bench"))
}

// BenchmarkPipelinedLargeProduce is BenchmarkPipelinedProduce with the
// requests of an idempotent producer under load: three partitions of
// 1 MiB each, five in flight.
func BenchmarkPipelinedLargeProduce(b *testing.B) {
	ts := startServer(b, newTestHandler(), nil)
	c := dial(b, ts.addr)
	frame := bigProduceFrame(3, 1<<20)
	const depth = 5
	batch := bytes.Repeat(frame, depth)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		// Not send: it would copy the batch, counted here.
		if _, err := c.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range depth {
			readResponse(b, c)
		}
	}
}

// BenchmarkReadProduceFrame measures framing a 3 MiB Produce request off
// a stream (the Produce scan included), its buffer returned after each
// as the connection does once the request is answered.
func BenchmarkReadProduceFrame(b *testing.B) {
	benchReadFrames(b, bigProduceFrame(3, 1<<20), func(frame, *versionTable) {})
}

// benchReadFrames reads frame over and over as a connection does, from a
// pooled buffer returned after each, and hands each read frame to each.
func benchReadFrames(b *testing.B, frameBytes []byte, each func(frame, *versionTable)) {
	vt, err := newVersionTable(testAPIs)
	if err != nil {
		b.Fatal(err)
	}
	stream := &repeatReader{frame: frameBytes}
	fr := &frameReader{br: bufio.NewReaderSize(stream, ioBufferSize), versions: vt, bufs: &frameBufs{},
		limits: frameLimits{maxBytes: 100 << 20, maxNonProduce: 100 << 20}}
	pool := newMemPool(0)
	ctx := context.Background()
	b.SetBytes(int64(len(frameBytes)))
	b.ReportAllocs()
	for b.Loop() {
		res := pool.reserve()
		fm, err := fr.next(ctx, res)
		if err != nil {
			b.Fatal(err)
		}
		each(fm, vt)
		fr.bufs.put(fm.fb)
		res.release()
	}
}

// repeatReader yields frame over and over, in reads of at most 256 KiB
// (about what one read of a loopback socket returns).
type repeatReader struct {
	frame []byte
	pos   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p[:min(len(p), 256<<10)], r.frame[r.pos:])
	r.pos = (r.pos + n) % len(r.frame)
	return n, nil
}

// BenchmarkEncodeProduceResponse measures framing and encoding the answer
// to a three-partition Produce (v9, flexible) into a reused buffer, as
// the worker does for every produce request.
func BenchmarkEncodeProduceResponse(b *testing.B) {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	t := kmsg.NewProduceResponseTopic()
	t.Topic = "bench"
	for p := range int32(3) {
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = p, 1<<40, -1, 0
		t.Partitions = append(t.Partitions, sp)
	}
	resp.Topics = append(resp.Topics, t)
	h := header{APIKey: 0, APIVersion: 9, CorrelationID: 7}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = encodeResponse(buf[:0], h, resp); err != nil {
			b.Fatal(err)
		}
	}
}
