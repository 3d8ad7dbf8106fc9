package broker

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduce measures the produce path end to end on one node: a
// broker in-process and a client sending, one at a time over loopback,
// what a franz-go producer sends under load: one request with a batch of
// about 1 MiB for each of three partitions, of 1000 records of 1000 bytes
// or (small/) 8000 records of 100 bytes, where the per-record work shows.
// acks=1 and acks=-1 (plain batches), and acks=-1 idempotent, whose
// sequences advance with every request. The client patches the sequence
// and re-sums each batch's CRC in every mode, so that they differ only in
// the broker's work. allocs/op and B/op count both sides (one
// process); cpu-ns/op likewise.
func BenchmarkProduce(b *testing.B) {
	for _, c := range []struct {
		name       string
		acks       int16
		idempotent bool
	}{{"acks=1", 1, false}, {"acks=-1", -1, false}, {"acks=-1/idempotent", -1, true}} {
		for _, sz := range []struct {
			name    string
			n, size int
		}{{"", 1000, 1000}, {"small/", 8000, 100}} {
			b.Run(sz.name+c.name, func(b *testing.B) { benchProduce(b, c.acks, c.idempotent, sz.n, sz.size) })
		}
	}
}

func benchProduce(b *testing.B, acks int16, idempotent bool, n, size int) {
	br := startTestBroker(b)
	conn := br.dial()
	conn.createTopic("bench", 3, nil)
	batch := benchBatch(b, n, size)
	if idempotent {
		binary.BigEndian.PutUint64(batch[43:], 1) // producer id (a fresh one accepts any sequence)
		binary.BigEndian.PutUint16(batch[51:], 0) // epoch
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	for p := range int32(3) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, append([]byte(nil), batch...)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	var frame []byte
	resp := make([]byte, 64<<10)
	b.SetBytes(int64(3 * len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime(b)
	for i := 0; b.Loop(); i++ {
		for _, rp := range rt.Partitions {
			binary.BigEndian.PutUint32(rp.Records[53:], uint32(i*n)) // base sequence
			binary.BigEndian.PutUint32(rp.Records[17:], crc32.Checksum(rp.Records[21:], castagnoli))
		}
		frame = conn.encodeFrame(frame[:0], req)
		if _, err := conn.nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn.br, resp[:4]); err != nil {
			b.Fatal(err)
		}
		rn := binary.BigEndian.Uint32(resp)
		if _, err := io.ReadFull(conn.br, resp[:rn]); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			checkProduced(b, req, resp[4:rn])
		}
	}
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeFrame appends req framed with a request header to buf.
func (c *rawConn) encodeFrame(buf []byte, req kmsg.Request) []byte {
	c.corr++
	buf = binary.BigEndian.AppendUint32(buf, 0)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(c.corr))
	buf = binary.BigEndian.AppendUint16(buf, 4)
	buf = append(buf, "test"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// checkProduced fails the benchmark unless every partition was appended.
func checkProduced(b *testing.B, req *kmsg.ProduceRequest, body []byte) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body[1:]); err != nil { // after the header's empty tags
		b.Fatalf("decode produce response: %v", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error code %d", p.Partition, p.ErrorCode)
			}
		}
	}
}
