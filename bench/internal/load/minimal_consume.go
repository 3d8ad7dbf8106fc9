package load

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's consumer defaults, which franz-go shares.
const (
	fetchMaxBytes          = 50 << 20 // fetch.max.bytes
	fetchPartitionMaxBytes = 1 << 20  // max.partition.fetch.bytes
	fetchMaxWaitMillis     = 500      // fetch.max.wait.ms
)

// minimalIdle is how long the minimal consumer waits for its next record
// before it gives up.
const minimalIdle = 30 * time.Second

// ConsumeMinimal reads want records of topic (partitions 0..partitions-1,
// on the broker at addr) from the start with the minimal client and
// returns what it received. The clock runs from the first Fetch to the
// last record.
func ConsumeMinimal(ctx context.Context, addr, topic string, partitions int, want int64, cpu CPUFunc) (Result, error) {
	c, err := dialMinimal(addr)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Now()) })
	defer stop()
	offsets := make([]int64, partitions)
	var res Result
	m, err := startMeter(cpu)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	last := start
	p := startPrefetch(c, fetchRequest(topic, partitions), want)
	defer p.stop()
	for res.Records < want {
		f, err := p.next()
		if err != nil {
			return Result{}, fmt.Errorf("consume %s: %w", topic, err)
		}
		n, err := takeFetch(f.resp, offsets, &res, nil)
		p.release(f)
		if err != nil {
			return Result{}, fmt.Errorf("consume %s: %w", topic, err)
		}
		if n > 0 {
			last = time.Now()
		} else if time.Since(last) > minimalIdle {
			return Result{}, fmt.Errorf("consume %s: %d of %d records, then nothing for %v", topic, res.Records, want, minimalIdle)
		}
	}
	res.Elapsed = last.Sub(start)
	if res.CPU, res.ClientCPU, err = m.stop(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// prefetcher reads a consumer's Fetch responses on a goroutine of its
// own and sends the next Fetch as soon as a response is read and its
// batch headers walked, before the consumer checks it: the Java consumer
// too sends its next fetches before it hands the records it has to the
// application, so the broker serves one fetch while the client checks
// the last. One Fetch is still in flight at a time; the responses go
// into two buffers in turn.
type prefetcher struct {
	out  chan *fetched // responses read, in order; closed when the reader stops
	free chan *fetched // buffers the consumer is done with
	done chan struct{} // closed by stop
}

// fetched is one response and the buffer it was read into, or the
// error that ended the reader.
type fetched struct {
	resp *kmsg.FetchResponse
	buf  []byte
	err  error
}

// startPrefetch sends req (its offsets from 0) and goes on fetching
// until responses holding want records have been read.
func startPrefetch(c *minConn, req *kmsg.FetchRequest, want int64) *prefetcher {
	// Two buffers and one error at most are ever in out.
	p := &prefetcher{out: make(chan *fetched, 3), free: make(chan *fetched, 2), done: make(chan struct{})}
	for range 2 {
		p.free <- &fetched{resp: kmsg.NewPtrFetchResponse()}
	}
	go p.run(c, req, want)
	return p
}

func (p *prefetcher) run(c *minConn, req *kmsg.FetchRequest, want int64) {
	defer close(p.out)
	offsets := make([]int64, len(req.Topics[0].Partitions))
	send := func() error {
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].FetchOffset = offsets[i]
		}
		if err := c.c.SetDeadline(time.Now().Add(minimalIdle)); err != nil {
			return fmt.Errorf("minimal consumer: %w", err)
		}
		return c.request(req)
	}
	if err := send(); err != nil {
		p.out <- &fetched{err: err}
		return
	}
	var seen int64
	for {
		var f *fetched
		select {
		case f = <-p.free:
		case <-p.done:
			return
		}
		f.resp.Default()
		f.resp.Version = minFetchVersion
		var err error
		if f.buf, err = c.responseInto(f.resp, f.buf); err != nil {
			p.out <- &fetched{err: err}
			return
		}
		n, err := advanceFetch(f.resp, offsets)
		if err != nil {
			p.out <- &fetched{err: err}
			return
		}
		seen += n
		more := seen < want
		if more {
			err = send()
		}
		p.out <- f
		if err != nil {
			p.out <- &fetched{err: err}
			return
		}
		if !more {
			return
		}
	}
}

// next is the next response read.
func (p *prefetcher) next() (*fetched, error) {
	f, ok := <-p.out
	switch {
	case !ok:
		return nil, errors.New("minimal consumer: the fetches stopped before every record arrived")
	case f.err != nil:
		return nil, f.err
	}
	return f, nil
}

// release hands a response's buffer back for the reader to fill again.
func (p *prefetcher) release(f *fetched) { p.free <- f }

// stop ends the reader once its read in progress, if any, ends (the
// caller closes the connection).
func (p *prefetcher) stop() { close(p.done) }

// fetchRequest is a Fetch v12 of every partition of topic with Kafka's
// default sizes and no fetch session.
func fetchRequest(topic string, partitions int) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = minFetchVersion
	req.ReplicaID = -1
	req.MaxWaitMillis = fetchMaxWaitMillis
	req.MinBytes = 1
	req.MaxBytes = fetchMaxBytes
	req.SessionEpoch = -1 // no session: every partition, every time
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	for p := range partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = int32(p)
		fp.CurrentLeaderEpoch = -1
		fp.LogStartOffset = -1
		fp.PartitionMaxBytes = fetchPartitionMaxBytes
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// takeFetch checks and counts the whole batches of a Fetch response,
// moving each partition's offset past them, and returns how many records
// it took. each, if not nil, gets every record's value.
func takeFetch(resp *kmsg.FetchResponse, offsets []int64, res *Result, each func(value []byte)) (int64, error) {
	return walkFetch(resp, offsets, func(b []byte, offset int64) (int64, int64, error) {
		return takeBatches(b, offset, res, each)
	})
}

// advanceFetch moves offsets past the whole batches of a Fetch response
// as takeFetch does, from their headers only, and returns the records
// they hold.
func advanceFetch(resp *kmsg.FetchResponse, offsets []int64) (int64, error) {
	return walkFetch(resp, offsets, func(b []byte, offset int64) (int64, int64, error) {
		return wholeBatches(b, offset, nil)
	})
}

// walkFetch calls take with each partition's record batches and offset
// and sets the offset to the next one take returns; it returns the
// records take counted.
func walkFetch(resp *kmsg.FetchResponse, offsets []int64, take func(b []byte, offset int64) (int64, int64, error)) (int64, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, err
	}
	var n int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return n, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			if p.Partition < 0 || int(p.Partition) >= len(offsets) {
				return n, fmt.Errorf("fetch response for partition %d", p.Partition)
			}
			k, next, err := take(p.RecordBatches, offsets[p.Partition])
			if err != nil {
				return n, fmt.Errorf("partition %d at offset %d: %w", p.Partition, offsets[p.Partition], err)
			}
			offsets[p.Partition] = next
			n += k
		}
	}
	return n, nil
}

// takeBatches checks each whole batch of b at or after offset (its
// CRC-32C and every record's framing) and adds the records and their
// value bytes to res. It returns the records taken and the next offset
// to fetch. each, if not nil, gets every value taken.
func takeBatches(b []byte, offset int64, res *Result, each func(value []byte)) (int64, int64, error) {
	return wholeBatches(b, offset, func(batch []byte, count int) error {
		if crc32.Checksum(batch[21:], castagnoli) != binary.BigEndian.Uint32(batch[17:]) {
			return errors.New("batch CRC-32C mismatch")
		}
		if binary.BigEndian.Uint16(batch[21:])&0x7 != 0 {
			return errors.New("compressed batch")
		}
		values, err := walkRecords(batch[batchHeaderLen:], count, each)
		if err != nil {
			return err
		}
		res.Records += int64(count)
		res.Bytes += values
		return nil
	})
}

// wholeBatches walks the v2 batches of b by their headers (a partial
// batch at the end, cut by the fetch size, is left for the next fetch),
// skipping those before offset and handing the others and their record
// counts to take, if not nil. It returns the records of the batches it
// took and the next offset to fetch.
func wholeBatches(b []byte, offset int64, take func(batch []byte, count int) error) (int64, int64, error) {
	var n int64
	for len(b) >= batchHeaderLen {
		length := int(int32(binary.BigEndian.Uint32(b[8:])))
		if length < batchHeaderLen-12 {
			return n, offset, fmt.Errorf("batch length %d", length)
		}
		if 12+length > len(b) {
			break // partial
		}
		batch := b[:12+length]
		b = b[12+length:]
		if batch[16] != 2 {
			return n, offset, fmt.Errorf("batch magic %d", batch[16])
		}
		base := int64(binary.BigEndian.Uint64(batch))
		last := base + int64(int32(binary.BigEndian.Uint32(batch[23:])))
		if last < offset {
			continue // before what was asked for
		}
		count := int(int32(binary.BigEndian.Uint32(batch[57:])))
		if take != nil {
			if err := take(batch, count); err != nil {
				return n, offset, err
			}
		}
		// Fetching from offset, the next batch starts at it: the
		// consumer only ever asks from the end of a batch it took.
		n += int64(count)
		offset = last + 1
	}
	return n, offset, nil
}

// walkRecords reads count records and returns their value bytes,
// handing each value to each if it is not nil.
func walkRecords(b []byte, count int, each func(value []byte)) (int64, error) {
	var values int64
	for range count {
		length, k := binary.Varint(b)
		if k <= 0 || length < 0 || int64(len(b)-k) < length {
			return 0, errors.New("record length")
		}
		rec := b[k : k+int(length)]
		b = b[k+int(length):]
		v, err := recordValue(rec)
		if err != nil {
			return 0, err
		}
		if each != nil {
			each(v)
		}
		values += int64(len(v))
	}
	if len(b) != 0 {
		return 0, fmt.Errorf("%d bytes after the batch's records", len(b))
	}
	return values, nil
}

// recordValue parses a record's body to its value (nil if null).
func recordValue(rec []byte) ([]byte, error) {
	if len(rec) < 1 {
		return nil, errors.New("empty record")
	}
	rec = rec[1:] // attributes
	for range 2 { // timestamp delta, offset delta
		_, k := binary.Varint(rec)
		if k <= 0 {
			return nil, errors.New("record header")
		}
		rec = rec[k:]
	}
	keyLen, k := binary.Varint(rec)
	if k <= 0 || keyLen > int64(len(rec)-k) {
		return nil, errors.New("record key")
	}
	rec = rec[k+int(max(keyLen, 0)):]
	valueLen, k := binary.Varint(rec)
	if k <= 0 || valueLen > int64(len(rec)-k) {
		return nil, errors.New("record value")
	}
	if valueLen < 0 {
		return nil, nil
	}
	return rec[k : k+int(valueLen)], nil
}
