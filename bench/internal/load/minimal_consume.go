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
	req := fetchRequest(topic, partitions)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	var res Result
	m, err := startMeter(cpu)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	last := start
	for res.Records < want {
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].FetchOffset = offsets[i]
		}
		if err := c.c.SetDeadline(time.Now().Add(minimalIdle)); err != nil {
			return Result{}, fmt.Errorf("minimal consumer: %w", err)
		}
		if err := c.request(req); err != nil {
			return Result{}, err
		}
		resp.Default()
		resp.Version = minFetchVersion
		if err := c.response(resp); err != nil {
			return Result{}, err
		}
		n, err := takeFetch(resp, offsets, &res, nil)
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
			k, next, err := takeBatches(p.RecordBatches, offsets[p.Partition], res, each)
			if err != nil {
				return n, fmt.Errorf("partition %d at offset %d: %w", p.Partition, offsets[p.Partition], err)
			}
			offsets[p.Partition] = next
			n += k
		}
	}
	return n, nil
}

// takeBatches walks the v2 batches of b (a partial batch at the end, cut
// by the fetch size, is left for the next fetch), checking each one's
// CRC-32C and every record's framing, skipping batches before offset,
// and adds the records and their value bytes to res. It returns the
// records taken and the next offset to fetch. each, if not nil, gets
// every value taken.
func takeBatches(b []byte, offset int64, res *Result, each func(value []byte)) (int64, int64, error) {
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
		if crc32.Checksum(batch[21:], castagnoli) != binary.BigEndian.Uint32(batch[17:]) {
			return n, offset, errors.New("batch CRC-32C mismatch")
		}
		base := int64(binary.BigEndian.Uint64(batch))
		last := base + int64(int32(binary.BigEndian.Uint32(batch[23:])))
		if last < offset {
			continue // before what was asked for
		}
		if binary.BigEndian.Uint16(batch[21:])&0x7 != 0 {
			return n, offset, errors.New("compressed batch")
		}
		count := int(int32(binary.BigEndian.Uint32(batch[57:])))
		values, err := walkRecords(batch[batchHeaderLen:], count, each)
		if err != nil {
			return n, offset, err
		}
		// Fetching from offset, the next batch starts at it: the
		// consumer only ever asks from the end of a batch it took.
		n += int64(count)
		res.Records += int64(count)
		res.Bytes += values
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
