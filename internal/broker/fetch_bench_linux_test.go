package broker

import (
	"encoding/binary"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// BenchmarkFetch measures fetch assembly and sending end to end: a
// broker in-process, three partitions of 8 MiB in 16 KiB batches, and a
// client fetching 1 MiB (or 16 KiB: one batch) of each per request over
// loopback and discarding the bytes. allocs/op and B/op count the broker's side too (the
// benchmark and the broker share a process). weir.fetch.sendfile.enable
// picks the raw (sendfile) or the copying path.
func BenchmarkFetch(b *testing.B) {
	for _, c := range []struct {
		sendfile bool
		part     int // bytes per partition and request
	}{{true, 1 << 20}, {false, 1 << 20}, {true, 16 << 10}, {false, 16 << 10}} {
		sendfile, part := c.sendfile, c.part
		b.Run(fmt.Sprintf("sendfile=%v/partition=%dKiB", sendfile, part>>10), func(b *testing.B) {
			br := startTestBroker(b, fmt.Sprintf("weir.fetch.sendfile.enable=%v", sendfile))
			c := br.dial()
			c.createTopic("bench", 3, nil)
			batch := benchBatch(b, 16, 1000) // ~16 KiB
			const batches = 512              // 8 MiB a partition
			for p := range int32(3) {
				for range batches {
					resp := c.request(produceReq(7, "bench", p, append([]byte(nil), batch...))).(*kmsg.ProduceResponse)
					if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
						b.Fatalf("produce: error code %d", code)
					}
				}
			}
			step := int64(max(part/len(batch), 1)) * 16 // records in part
			offsets := [3]int64{}
			buf := make([]byte, 4<<20)
			b.ReportAllocs()
			b.ResetTimer()
			before := cpuTime(b)
			var moved int64
			for b.Loop() {
				req := kmsg.NewPtrFetchRequest()
				req.SetVersion(12)
				req.ReplicaID, req.MaxBytes = -1, 50<<20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = "bench"
				for p := range int32(3) {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], int32(part)
					rt.Partitions = append(rt.Partitions, rp)
					offsets[p] = (offsets[p] + step) % (batches * 16 / 2)
				}
				req.Topics = append(req.Topics, rt)
				moved += c.sendDiscard(b, req, buf)
			}
			b.SetBytes(moved / int64(b.N))
			// Broker and client share the process; the client's part is
			// the same whichever path the broker takes.
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchBatch is one uncompressed batch of n records of size bytes.
func benchBatch(b *testing.B, n, size int) []byte {
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: make([]byte, size)}
	}
	out, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// sendDiscard sends req and reads its response into buf without decoding
// it; it returns the response's size.
func (c *rawConn) sendDiscard(b *testing.B, req kmsg.Request, buf []byte) int64 {
	c.corr++
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint16(body, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(c.corr))
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	binary.BigEndian.PutUint32(body, uint32(len(body)-4))
	if _, err := c.nc.Write(body); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c.br, buf[:4]); err != nil {
		b.Fatal(err)
	}
	n := int64(binary.BigEndian.Uint32(buf))
	if _, err := io.CopyN(io.Discard, c.br, n); err != nil {
		b.Fatal(err)
	}
	return n + 4
}
