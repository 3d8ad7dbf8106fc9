package faults

import (
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
	"github.com/weir-project/weir/test/harness"
)

// maxMessageBytes is the broker's message.max.bytes in TestBadInput, small
// so that an oversized batch is cheap to build.
const maxMessageBytes = 4096

// TestBadInput sends hostile or invalid requests over raw TCP to one
// broker. Each case checks the answer (or that the connection was
// closed), then that a fresh client can still produce and consume.
func TestBadInput(t *testing.T) {
	b := harness.StartBroker(t,
		"auto.create.topics.enable=false",
		"message.max.bytes="+itoa(maxMessageBytes))
	const topic = "badinput"
	createTopic(t, b, topic, 1, nil)

	closes := []struct {
		name  string
		bytes func() []byte
	}{
		{"frame size 2GiB", func() []byte { return sizePrefixed(0x7fffffff, "abcd") }},
		{"frame size -1", func() []byte { return sizePrefixed(0xffffffff, "abcd") }},
		{"frame size min int32", func() []byte { return sizePrefixed(0x80000000, "abcd") }},
		{"frame size over socket.request.max.bytes", func() []byte { return sizePrefixed(104857601, "abcd") }},
		{"garbage frame", garbageFrame},
		{"unknown API key 9999", func() []byte { return frameBody(9999, 0, false, 1, nil) }},
		{"negative API key", func() []byte { return frameBody(-1, 0, false, 1, nil) }},
		{"API key not served (JoinGroup)", func() []byte { return frameBody(11, 5, false, 1, []byte{0, 0}) }},
		{"Produce v99", func() []byte { return frameBody(0, 99, false, 1, nil) }},
		{"Produce v2 (below floor)", func() []byte { return frameBody(0, 2, false, 1, nil) }},
		{"header shorter than fixed fields", func() []byte { return sizePrefixed(6, "\x00\x03\x00\x01\x00\x00") }},
		{"client id longer than frame", func() []byte { return sizePrefixed(10, "\x00\x03\x00\x01\x00\x00\x00\x01\x7f\xff") }},
		{"Metadata v1 claiming 1,000,000 topics", func() []byte {
			return frameBody(3, 1, false, 1, binary.BigEndian.AppendUint32(nil, 1_000_000))
		}},
		{"Metadata v9 compact array claiming 1,000,000 topics", func() []byte {
			body := binary.AppendUvarint(nil, 1_000_001) // compact: count+1
			return frameBody(3, 9, true, 1, body)
		}},
		{"header v2 tagged field longer than the frame", func() []byte {
			tags := []byte{1, 0}                     // one tagged field, tag 0
			tags = binary.AppendUvarint(tags, 1<<20) // of 1 MiB
			return frameBody(3, 9, false, 1, append(tags, 1, 2, 3))
		}},
		{"Produce v7 claiming 2^31-1 partitions", func() []byte {
			body := []byte{0xff, 0xff}                             // null transactional id
			body = binary.BigEndian.AppendUint16(body, 1)          // acks
			body = binary.BigEndian.AppendUint32(body, 1000)       // timeout
			body = binary.BigEndian.AppendUint32(body, 1)          // one topic
			body = append(body, 0, byte(len(topic)))               // topic name
			body = append(body, topic...)                          //
			body = binary.BigEndian.AppendUint32(body, 0x7fffffff) // partitions
			return frameBody(0, 7, false, 1, body)
		}},
		{"Produce v7 records length past the frame", func() []byte {
			body := []byte{0xff, 0xff}
			body = binary.BigEndian.AppendUint16(body, 1)
			body = binary.BigEndian.AppendUint32(body, 1000)
			body = binary.BigEndian.AppendUint32(body, 1)
			body = append(body, 0, byte(len(topic)))
			body = append(body, topic...)
			body = binary.BigEndian.AppendUint32(body, 1)          // one partition
			body = binary.BigEndian.AppendUint32(body, 0)          // partition 0
			body = binary.BigEndian.AppendUint32(body, 0x7ffffff0) // records bytes
			return frameBody(0, 7, false, 1, append(body, 1, 2, 3))
		}},
	}
	for _, tc := range closes {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			c.write(tc.bytes())
			c.expectClosed()
			assertServes(t, b)
		})
	}

	t.Run("truncated frame then disconnect", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		c.write(sizePrefixed(100, "\x00\x03\x00\x01\x00\x00\x00\x01\x00"))
		c.nc.Close()
		assertServes(t, b)
	})

	t.Run("many connections left half-written", func(t *testing.T) {
		// Each waits for bytes that never come; they must not stop
		// other clients from being served.
		for range 20 {
			c := dialRaw(t, b.Addr)
			c.write(sizePrefixed(1000, "\x00\x00"))
		}
		assertServes(t, b)
	})

	t.Run("wrong CRC is CORRUPT_MESSAGE and nothing is appended", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		before := endOffsets(t, b, topic)[0]
		for _, at := range []int{recordbatch.HeaderSize - 40, recordbatch.HeaderSize + 3, -1} {
			batch := buildBatch(t, 3, 10)
			if at < 0 {
				at += len(batch)
			}
			batch[at] ^= 0x40
			sp := produceRaw(c, topic, 0, 1, batch)
			expectCode(t, "produce with a flipped byte at "+itoa(at), sp.ErrorCode, kerr.CorruptMessage)
		}
		if after := endOffsets(t, b, topic)[0]; after != before {
			t.Fatalf("end offset moved from %d to %d after corrupt batches", before, after)
		}
		// A per-partition error leaves the connection usable.
		sp := produceRaw(c, topic, 0, 1, buildBatch(t, 2, 10))
		expectCode(t, "produce a good batch after corrupt ones", sp.ErrorCode, nil)
		if sp.BaseOffset != before {
			t.Fatalf("good batch got offset %d, want %d", sp.BaseOffset, before)
		}
		assertServes(t, b)
	})

	t.Run("one corrupt partition of a request fails alone", func(t *testing.T) {
		// The broker validates each batch as it arrives and the append
		// trusts what passed: a bad batch between good ones must still
		// fail its partition, and only it.
		const mixed = "badinput-mixed"
		createTopic(t, b, mixed, 3, nil)
		c := dialRaw(t, b.Addr)
		corrupt := buildBatch(t, 2, 10)
		corrupt[len(corrupt)-1] ^= 1
		req := produceRequest(mixed, 0, 1, buildBatch(t, 5, 10))
		for p, records := range map[int32][]byte{1: corrupt, 2: buildBatch(t, 4, 10)} {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, records
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		resp := c.roundTrip(req).(*kmsg.ProduceResponse)
		want := map[int32]*kerr.Error{0: nil, 1: kerr.CorruptMessage, 2: nil}
		for _, sp := range resp.Topics[0].Partitions {
			expectCode(t, "partition "+itoa(int(sp.Partition)), sp.ErrorCode, want[sp.Partition])
		}
		if got := endOffsets(t, b, mixed); got[0] != 5 || got[1] != 0 || got[2] != 4 {
			t.Fatalf("end offsets %v, want 0:5 1:0 2:4", got)
		}
		assertServes(t, b)
	})

	t.Run("acks=0 with an error closes the connection", func(t *testing.T) {
		// The client expects no answer, so Kafka closes the connection
		// to tell it something went wrong (it then refreshes metadata).
		c := dialRaw(t, b.Addr)
		before := endOffsets(t, b, topic)[0]
		c.write(frame(produceRequest(topic, 0, 0, buildBatch(t, 1, 10)), 1))
		harness.WaitFor(t, opTimeout, "the acks=0 record to be appended", func() bool {
			return endOffsets(t, b, topic)[0] == before+1
		})
		// The connection is still open after a good acks=0 request.
		sp := produceRaw(c, topic, 0, 1, buildBatch(t, 1, 10))
		expectCode(t, "acks=1 produce after a good acks=0 produce", sp.ErrorCode, nil)

		batch := buildBatch(t, 1, 10)
		batch[len(batch)-1] ^= 1
		c.write(frame(produceRequest(topic, 0, 0, batch), 9))
		c.expectClosed()
		if after := endOffsets(t, b, topic)[0]; after != before+2 {
			t.Fatalf("end offset %d after a corrupt acks=0 batch, want %d", after, before+2)
		}
		assertServes(t, b)
	})

	t.Run("batch over message.max.bytes is MESSAGE_TOO_LARGE", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		before := endOffsets(t, b, topic)[0]
		sp := produceRaw(c, topic, 0, 1, buildBatch(t, 1, 2*maxMessageBytes))
		expectCode(t, "oversized produce", sp.ErrorCode, kerr.MessageTooLarge)
		if after := endOffsets(t, b, topic)[0]; after != before {
			t.Fatalf("end offset moved from %d to %d after an oversized batch", before, after)
		}
		assertServes(t, b)
	})

	t.Run("record count disagreeing with lastOffsetDelta", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		before := endOffsets(t, b, topic)[0]
		for _, tc := range []struct {
			name     string
			off, val int
		}{
			{"recordCount 5 for 3 records", 57, 5},
			{"lastOffsetDelta 7 for 3 records", 23, 7},
			{"recordCount 0", 57, 0},
		} {
			batch := buildBatch(t, 3, 10)
			binary.BigEndian.PutUint32(batch[tc.off:], uint32(tc.val))
			fixCRC(batch)
			sp := produceRaw(c, topic, 0, 1, batch)
			if sp.ErrorCode != kerr.InvalidRecord.Code && sp.ErrorCode != kerr.CorruptMessage.Code {
				t.Errorf("%s: error %v, want INVALID_RECORD or CORRUPT_MESSAGE", tc.name, kerr.ErrorForCode(sp.ErrorCode))
			}
		}
		if after := endOffsets(t, b, topic)[0]; after != before {
			t.Fatalf("end offset moved from %d to %d after inconsistent batches", before, after)
		}
		assertServes(t, b)
	})

	t.Run("invalid acks is INVALID_REQUIRED_ACKS", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		before := endOffsets(t, b, topic)[0]
		for _, acks := range []int16{2, -2, 100} {
			sp := produceRaw(c, topic, 0, acks, buildBatch(t, 1, 10))
			expectCode(t, "produce with acks="+itoa(int(acks)), sp.ErrorCode, kerr.InvalidRequiredAcks)
		}
		if after := endOffsets(t, b, topic)[0]; after != before {
			t.Fatalf("end offset moved from %d to %d after invalid acks", before, after)
		}
		assertServes(t, b)
	})

	t.Run("unknown topic with auto-create off", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		sp := produceRaw(c, "no-such-topic", 0, 1, buildBatch(t, 1, 10))
		expectCode(t, "produce to an unknown topic", sp.ErrorCode, kerr.UnknownTopicOrPartition)
		md := metadataRaw(c, 12, "no-such-topic")
		expectCode(t, "metadata of an unknown topic", md.ErrorCode, kerr.UnknownTopicOrPartition)
		assertServes(t, b)
	})

	t.Run("partition that does not exist", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		for _, p := range []int32{1, 5, -1, 1 << 30} {
			sp := produceRaw(c, topic, p, 1, buildBatch(t, 1, 10))
			expectCode(t, "produce to partition "+itoa(int(p)), sp.ErrorCode, kerr.UnknownTopicOrPartition)
		}
		assertServes(t, b)
	})

	t.Run("bad topic names are INVALID_TOPIC_EXCEPTION", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		for _, name := range []string{"bad name!", "..", ".", strings.Repeat("a", 250), "a/b", ""} {
			for _, v := range []int16{1, 4, 12} {
				md := metadataRaw(c, v, name)
				expectCode(t, "metadata v"+itoa(int(v))+" of "+quote(name), md.ErrorCode, kerr.InvalidTopicException)
			}
			for _, v := range []int16{4, 7} {
				ct := createTopicsRaw(c, v, name)
				expectCode(t, "create topics v"+itoa(int(v))+" of "+quote(name), ct.ErrorCode, kerr.InvalidTopicException)
			}
		}
		// 249 characters is Kafka's limit and still valid.
		ct := createTopicsRaw(c, 7, strings.Repeat("b", 249))
		expectCode(t, "create a 249-character topic", ct.ErrorCode, nil)
		assertServes(t, b)
	})

	t.Run("fetch outside the log is OFFSET_OUT_OF_RANGE", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		end := endOffsets(t, b, topic)[0]
		for _, off := range []int64{end + 1, end + 1000, -5} {
			fp := fetchRaw(c, topic, 0, off)
			expectCode(t, "fetch at offset "+itoa(int(off))+" (end "+itoa(int(end))+")", fp.ErrorCode, kerr.OffsetOutOfRange)
		}
		fp := fetchRaw(c, topic, 0, end)
		expectCode(t, "fetch at the end offset", fp.ErrorCode, nil)
		assertServes(t, b)
	})
}

// garbageFrame is a correctly sized frame of pseudo-random bytes whose API
// key is one we never serve.
func garbageFrame() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	binary.BigEndian.PutUint16(b[4:], 0x7abc)
	return b
}

func sizePrefixed(size uint32, rest string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, size), rest...)
}

// buildBatch is a valid, uncompressed batch of n records of size bytes.
func buildBatch(t testing.TB, n, size int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i].Value = []byte(strings.Repeat("v", size))
	}
	batch, err := recordbatch.Build(recordbatch.BuildOptions{
		BaseTimestamp: time.Now().UnixMilli(),
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// fixCRC recomputes a batch's CRC-32C after a deliberate header edit, so
// that the edit, not the checksum, is what the broker judges.
func fixCRC(batch []byte) {
	const crcAt, attrsAt = 17, 21
	sum := crc32.Checksum(batch[attrsAt:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(batch[crcAt:], sum)
}

func produceRaw(c *rawConn, topic string, partition int32, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	c.t.Helper()
	resp := c.roundTrip(produceRequest(topic, partition, acks, batch)).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("produce response has %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// produceRequest is a Produce v9 of one batch to one partition.
func produceRequest(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func metadataRaw(c *rawConn, version int16, topic string) kmsg.MetadataResponseTopic {
	c.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(version)
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		c.t.Fatalf("metadata v%d for %q: %d topics in the answer, want 1", version, topic, len(resp.Topics))
	}
	return resp.Topics[0]
}

func createTopicsRaw(c *rawConn, version int16, topic string) kmsg.CreateTopicsResponseTopic {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		c.t.Fatalf("create topics v%d for %q: %d topics in the answer, want 1", version, topic, len(resp.Topics))
	}
	return resp.Topics[0]
}

func fetchRaw(c *rawConn, topic string, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		c.t.Fatalf("fetch: top-level error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("fetch response has %d topics, want 1 with 1 partition", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// expectCode fails unless code is want's (nil: no error).
func expectCode(t *testing.T, what string, code int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if code != wantCode {
		t.Errorf("%s: error %v (%d), want %v (%d)", what, kerr.ErrorForCode(code), code, want, wantCode)
	}
}
