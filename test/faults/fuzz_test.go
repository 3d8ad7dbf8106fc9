package faults

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// fuzzKeys are the APIs the fuzzer may address: every read path and
// Produce, plus keys we do not serve. Admin writes are left out so that a
// fuzz run cannot create millions of partitions and time out for reasons
// that are not bugs (Kafka has no bound there either).
var fuzzKeys = []int16{0, 1, 2, 3, 18, 23, 32, 60, 11, 9999}

// FuzzBrokerRequest sends one request frame built from fuzz input to the
// real broker on a fresh connection (correct size prefix and header, so
// the body decoders and handlers are what gets exercised), then proves
// the broker still answers ApiVersions and appends a batch, and logged
// neither a panic nor a data race.
func FuzzBrokerRequest(f *testing.F) {
	b := harness.StartBroker(f, "auto.create.topics.enable=false", "message.max.bytes=65536")
	const topic = "fuzzed"
	createTopic(f, b, topic, 2, nil)

	// Seeds: a valid request of each kind, and the hostile bodies of
	// TestBadInput.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mdt := kmsg.NewMetadataRequestTopic()
	mdt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mdt)
	f.Add(uint8(3), int16(12), md.AppendTo(nil))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	f.Add(uint8(1), int16(11), fetch.AppendTo(nil))
	prod := kmsg.NewPtrProduceRequest()
	prod.SetVersion(9)
	prod.Acks = 1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = buildBatch(f, 2, 5)
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	f.Add(uint8(0), int16(9), prod.AppendTo(nil))
	f.Add(uint8(3), int16(1), binary.BigEndian.AppendUint32(nil, 1_000_000))
	f.Add(uint8(0), int16(7), []byte{0xff, 0xff, 0, 1, 0, 0, 3, 0xe8, 0, 0, 0, 1, 0, 1, 'x', 0x7f, 0xff, 0xff, 0xff})
	f.Add(uint8(4), int16(3), []byte{})
	f.Add(uint8(8), int16(3), []byte("garbage"))
	f.Add(uint8(9), int16(0), []byte{0, 0})

	logEnd := 0
	f.Fuzz(func(t *testing.T, keyIdx uint8, version int16, body []byte) {
		key := fuzzKeys[int(keyIdx)%len(fuzzKeys)]
		flexible := false
		if req := kmsg.RequestForKey(key); req != nil {
			req.SetVersion(version)
			flexible = req.IsFlexible()
		}
		bad := dialRaw(t, b.Addr)
		bad.write(frameBody(key, version, flexible, 1, body))
		// Whatever the answer, or none: leave. A long-polling Fetch is
		// cancelled by the close.
		bad.nc.Close()

		c := dialRaw(t, b.Addr)
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(3)
		av.ClientSoftwareName, av.ClientSoftwareVersion = "weir-fuzz", "1"
		if resp := c.roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Fatalf("ApiVersions after fuzz input: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if sp := produceRaw(c, topic, 0, 1, buildBatch(t, 1, 5)); sp.ErrorCode != 0 {
			t.Fatalf("produce after fuzz input: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
		var out string
		out, logEnd = b.OutputSince(logEnd)
		for _, bad := range []string{"DATA RACE", "panic"} {
			if strings.Contains(out, bad) {
				t.Fatalf("broker logged %q after key %d v%d body % x:\n%s", bad, key, version, body, out)
			}
		}
	})
}
