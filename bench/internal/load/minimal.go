package load

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The minimal client (ProduceMinimal, ConsumeMinimal) answers a question
// the franz-go runs cannot: where does a broker stand when its client
// costs as little as a client can? On two cores shared by client and
// broker, franz-go's own CPU per GB caps what any broker reaches with it
// (the client limit and client bound of the report). The minimal client
// does only what every producer and consumer must:
//
//   - a producer copies each value into a v2 record batch it builds in
//     the request buffer itself (no second copy), checksums it with
//     CRC-32C and sends one batch of about 1 MB per Produce, to the
//     partitions in turn, with up to five Produce requests in flight per
//     connection (the Java producer's max.in.flight default); at acks=-1
//     it is idempotent (a producer id and per-partition sequences);
//   - a consumer sends one Fetch at a time per connection (as franz-go
//     and the Java consumer do per broker) with Kafka's default sizes,
//     reads the response into one reused buffer, checks each batch's
//     CRC-32C and walks every record to its value.
//
// It speaks to one broker (the seed is every partition's leader) and has
// no retries: an error fails the run. LatencyMinimal (minimal_latency.go)
// drives the same producer and consumer at a fixed rate instead.

// minimalInFlight is how many Produce requests a connection keeps in
// flight: the Java producer's max.in.flight.requests.per.connection.
const minimalInFlight = 5

// minimalBatchBytes is the most a produce batch holds: franz-go's and
// Kafka's 1 MB batch cap (batch.max.bytes, max.request.size).
const minimalBatchBytes = 1_000_000

// castagnoli is CRC-32C, the checksum of v2 record batches.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordsPerBatch is how many records of size value bytes fill a batch.
func recordsPerBatch(size int) int {
	n := 0
	for total := batchHeaderLen; ; n++ {
		total += recordLen(n, size)
		if total > minimalBatchBytes {
			return max(n, 1)
		}
	}
}

const batchHeaderLen = 61

// recordBodyLen is the encoded length of record i's body (after its own
// length varint): attributes, timestamp delta 0, offset delta i, a null
// key, the value and no headers.
func recordBodyLen(i, size int) int {
	return 1 + 1 + varintLen(int64(i)) + 1 + varintLen(int64(size)) + size + 1
}

func recordLen(i, size int) int {
	b := recordBodyLen(i, size)
	return varintLen(int64(b)) + b
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// producerID is the idempotent producer's identity (pid -1: none).
type producerID struct {
	id    int64
	epoch int16
}

// appendBatch appends a v2 record batch of n records whose values come
// from vals, stamped now (ms), as producer pid with first sequence seq.
// With stamps (the latency runs), value i starts with stamps[i], its send
// time in Unix nanoseconds, big-endian.
func appendBatch(dst []byte, vals *values, n int, size int, pid producerID, seq int32, now int64, stamps []int64) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, 0)          // base offset: the broker assigns it
	dst = binary.BigEndian.AppendUint32(dst, 0)          // batch length, below
	dst = binary.BigEndian.AppendUint32(dst, 0xffffffff) // partition leader epoch: -1 from a producer
	dst = append(dst, 2)                                 // magic
	dst = binary.BigEndian.AppendUint32(dst, 0)          // CRC-32C, below
	dst = binary.BigEndian.AppendUint16(dst, 0)          // attributes: no compression, create time
	dst = binary.BigEndian.AppendUint32(dst, uint32(n-1))
	dst = binary.BigEndian.AppendUint64(dst, uint64(now))
	dst = binary.BigEndian.AppendUint64(dst, uint64(now))
	dst = binary.BigEndian.AppendUint64(dst, uint64(pid.id))
	dst = binary.BigEndian.AppendUint16(dst, uint16(pid.epoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(seq))
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	for i := range n {
		dst = binary.AppendVarint(dst, int64(recordBodyLen(i, size)))
		dst = append(dst, 0, 0) // attributes, timestamp delta
		dst = binary.AppendVarint(dst, int64(i))
		dst = append(dst, 1) // key length -1 (zigzag)
		dst = binary.AppendVarint(dst, int64(size))
		dst = append(dst, vals.next()...)
		if stamps != nil {
			binary.BigEndian.PutUint64(dst[len(dst)-size:], uint64(stamps[i]))
		}
		dst = append(dst, 0) // no headers
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return dst
}

// batchLen is the length appendBatch gives n records of size bytes.
func batchLen(n, size int) int {
	total := batchHeaderLen
	for i := range n {
		total += recordLen(i, size)
	}
	return total
}

// produceRequest builds a Produce v9 of one batch for topic/partition
// into buf (reused) and returns the frame to write. The batch is built in
// place: the bytes before it (frame size, header, the request's fields up
// to the batch's length) go right in front of it, their length known
// once the batch's is.
func (m *minConn) produceRequest(buf []byte, topic string, partition int32, acks int16, batch func([]byte) []byte, blen int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = minProduceVersion
	pre := m.header(buf[:0], req)
	pre = append(pre, 0) // transactional id: null
	pre = binary.BigEndian.AppendUint16(pre, uint16(acks))
	pre = binary.BigEndian.AppendUint32(pre, 30_000)
	pre = binary.AppendUvarint(pre, 2) // one topic
	pre = binary.AppendUvarint(pre, uint64(len(topic)+1))
	pre = append(pre, topic...)
	pre = binary.AppendUvarint(pre, 2) // one partition
	pre = binary.BigEndian.AppendUint32(pre, uint32(partition))
	pre = binary.AppendUvarint(pre, uint64(blen+1))
	b := batch(pre)
	b = append(b, 0, 0, 0) // tags: partition, topic, request
	frame(b)
	return b
}

// ProduceMinimal runs w against topic (which exists, on the broker at
// addr) with the minimal client and returns what was acknowledged.
func ProduceMinimal(ctx context.Context, addr, topic string, w Workload, cpu CPUFunc) (Result, error) {
	acks := int16(w.Acks)
	var conns []*minConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	pids := make([]producerID, w.Producers)
	for i := range w.Producers {
		c, err := dialMinimal(addr)
		if err != nil {
			return Result{}, err
		}
		conns = append(conns, c)
		pids[i] = producerID{id: -1, epoch: -1}
		if acks == -1 {
			if pids[i], err = c.initProducerID(); err != nil {
				return Result{}, err
			}
		}
	}
	perBatch := recordsPerBatch(w.RecordSize)
	blen := batchLen(perBatch, w.RecordSize)
	budget := w.budget()
	var res Result
	var acked atomic.Int64
	errs := make([]error, len(conns))
	run, err := runProducers(w, cpu, &acked, &res.Timeline, func(i int, vals *values, deadline time.Time) {
		errs[i] = conns[i].produce(ctx, topic, w, acks, pids[i], int32(i), vals, perBatch, blen, deadline, budget, &acked)
	})
	if err != nil {
		return Result{}, err
	}
	for _, err := range errs {
		if err != nil {
			return Result{}, fmt.Errorf("produce to %s: %w", topic, err)
		}
	}
	res.Bytes = acked.Load()
	res.Records = res.Bytes / int64(w.RecordSize)
	res.Elapsed, res.CPU, res.ClientCPU = run.elapsed, run.broker, run.clientCPU
	res.BatchBytes = float64(perBatch * w.RecordSize)
	return res, nil
}

// produce sends batches until the deadline or the budget, keeping up to
// minimalInFlight requests in flight; a reader goroutine takes the
// responses in order and adds what they acknowledge to acked.
func (m *minConn) produce(ctx context.Context, topic string, w Workload, acks int16, pid producerID, first int32,
	vals *values, perBatch, blen int, deadline time.Time, budget int64, acked *atomic.Int64) error {
	inflight := make(chan struct{}, minimalInFlight)
	failed := make(chan error, 1)
	sent := make(chan int32, minimalInFlight) // partition of each request, in order
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := kmsg.NewPtrProduceResponse()
		for p := range sent {
			resp.Default()
			resp.Version = minProduceVersion
			err := m.response(resp)
			if err == nil {
				err = produceErr(resp, p)
			}
			if err != nil {
				failed <- err
				for range sent { // let the writer finish
					<-inflight
				}
				return
			}
			acked.Add(int64(perBatch * w.RecordSize))
			<-inflight
		}
	}()
	seqs := make([]int32, w.Partitions)
	buf := make([]byte, 0, blen+4096)
	p := first % int32(w.Partitions)
	var err error
	for n := int64(0); time.Now().Before(deadline) && (budget == 0 || n < budget) && ctx.Err() == nil; n += int64(perBatch * w.RecordSize) {
		select {
		case inflight <- struct{}{}:
		case err = <-failed:
		}
		if err != nil {
			break
		}
		seq, now := seqs[p], time.Now().UnixMilli()
		if pid.id >= 0 {
			seqs[p] += int32(perBatch)
		}
		buf = m.produceRequest(buf, topic, p, acks, func(dst []byte) []byte {
			return appendBatch(dst, vals, perBatch, w.RecordSize, pid, seq, now, nil)
		}, blen)
		sent <- p
		if err = m.write(buf); err != nil {
			break
		}
		p = (p + 1) % int32(w.Partitions)
	}
	close(sent)
	<-done
	if err == nil {
		select {
		case err = <-failed:
		default:
		}
	}
	return err
}

// produceErr is the error of a one-partition Produce response, if any.
func produceErr(resp *kmsg.ProduceResponse, partition int32) error {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("produce response with %d topics for one partition", len(resp.Topics))
	}
	rp := resp.Topics[0].Partitions[0]
	if rp.Partition != partition {
		return fmt.Errorf("produce response for partition %d, sent to %d", rp.Partition, partition)
	}
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return fmt.Errorf("partition %d: %w", partition, err)
	}
	return nil
}

func (m *minConn) initProducerID() (producerID, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = minInitPIDVersion
	req.TransactionTimeoutMillis = 60_000
	if err := m.request(req); err != nil {
		return producerID{}, err
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Version = minInitPIDVersion
	if err := m.response(resp); err != nil {
		return producerID{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return producerID{}, fmt.Errorf("init producer id: %w", err)
	}
	return producerID{id: resp.ProducerID, epoch: resp.ProducerEpoch}, nil
}
