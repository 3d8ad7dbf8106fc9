package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allAPIs accepts every key and version kmsg knows, so that the fuzzer
// reaches every request decoder.
func allAPIs() map[int16][2]int16 {
	m := make(map[int16][2]int16)
	for key := int16(0); key < 200; key++ {
		if req := kmsg.RequestForKey(key); req != nil {
			m[key] = [2]int16{0, req.MaxVersion()}
		}
	}
	return m
}

func TestParseRequestRoundTrip(t *testing.T) {
	vt, err := newVersionTable(allAPIs())
	if err != nil {
		t.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 1500
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3, Records: []byte("batch")}}}}
	for _, v := range []int16{3, 8, 9, 11} {
		frame := encodeRequest(produce, v, 42, strp("cid"))
		p := parseRequest(frame[4:], vt)
		if p.err != nil {
			t.Fatalf("Produce v%d: %v", v, p.err)
		}
		got, ok := p.req.(*kmsg.ProduceRequest)
		if !ok || got.GetVersion() != v || p.hdr.CorrelationID != 42 || p.hdr.ClientID != "cid" {
			t.Fatalf("Produce v%d: parsed %T v%d, header %+v", v, p.req, p.req.GetVersion(), p.hdr)
		}
		if got.Acks != -1 || got.TimeoutMillis != 1500 || len(got.Topics) != 1 ||
			got.Topics[0].Partitions[0].Partition != 3 || string(got.Topics[0].Partitions[0].Records) != "batch" {
			t.Fatalf("Produce v%d: fields not decoded: %+v", v, got)
		}
	}
	// Header v2 tagged fields are skipped, not mistaken for the body.
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("x")}}
	frame := encodeRequest(meta, 12, 7, nil)
	hdrEnd := 4 + 10 // size, key, version, correlation id, null client id
	tagged := append(append([]byte{}, frame[4:hdrEnd]...), 2, 0, 3, 'a', 'b', 'c', 5, 0)
	tagged = append(tagged, frame[hdrEnd+1:]...)
	p := parseRequest(tagged, vt)
	if p.err != nil {
		t.Fatalf("header with tags: %v", p.err)
	}
	if got := p.req.(*kmsg.MetadataRequest); len(got.Topics) != 1 || *got.Topics[0].Topic != "x" {
		t.Fatalf("header with tags: body misparsed: %+v", got)
	}
}

func FuzzParseRequest(f *testing.F) {
	vt, err := newVersionTable(allAPIs())
	if err != nil {
		f.Fatal(err)
	}
	seed := func(req kmsg.Request, v int16) {
		frame := encodeRequest(req, v, 1, strp("fuzz"))
		f.Add(frame[4:])
	}
	seed(kmsg.NewPtrApiVersionsRequest(), 0)
	seed(kmsg.NewPtrApiVersionsRequest(), 3)
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("topic")}}
	seed(meta, 1)
	seed(meta, 12)
	produce := kmsg.NewPtrProduceRequest()
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte{1, 2, 3}}}}}
	seed(produce, 7)
	seed(produce, 9)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 1}}}}
	seed(fetch, 4)
	seed(fetch, 11)
	seed(fetch, 13)
	seed(kmsg.NewPtrCreateTopicsRequest(), 5)
	seed(kmsg.NewPtrJoinGroupRequest(), 9)
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}
	dtp.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "t", Partition: 3}
	seed(dtp, 0)
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 32))
	f.Add(append(binary.BigEndian.AppendUint16([]byte{0, 3, 0, 9, 0, 0, 0, 1}, 0xffff), 0xff, 0xff, 0xff, 0xff, 0x0f))

	f.Fuzz(func(t *testing.T, frame []byte) {
		p := parseRequest(frame, vt)
		switch {
		case p.apiVersionsFallback:
			if p.req != nil || p.err != nil || p.hdr.APIKey != apiVersionsKey {
				t.Fatalf("fallback with req %v, err %v, key %d", p.req, p.err, p.hdr.APIKey)
			}
		case p.err == nil:
			if p.req == nil || p.req.Key() != p.hdr.APIKey || p.req.GetVersion() != p.hdr.APIVersion {
				t.Fatalf("parsed %v for header %+v", p.req, p.hdr)
			}
			// A decoded request re-encodes without trouble.
			_ = p.req.AppendTo(nil)
		default:
			if p.req != nil {
				t.Fatalf("error %v with a request", p.err)
			}
		}
	})
}

// readOneFrame reads the first frame of in with a frameReader, as a
// connection would, without a memory budget or deadlines.
func readOneFrame(in []byte, limits frameLimits) ([]byte, error) {
	vt, err := newVersionTable(allAPIs())
	if err != nil {
		return nil, err
	}
	fr := &frameReader{br: bufio.NewReader(bytes.NewReader(in)), limits: limits, versions: vt}
	fm, err := fr.next(context.Background(), newMemPool(-1).reserve())
	return fm.buf, err
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 'h', 'i'}, int32(10))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff}, int32(100))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, int32(100))
	f.Add([]byte{0, 0, 0, 9, 1}, int32(100))
	f.Fuzz(func(t *testing.T, in []byte, max int32) {
		if max < 0 || max > 1<<16 {
			return // the limit is configuration, not input
		}
		frame, err := readOneFrame(in, frameLimits{maxBytes: max, maxNonProduce: max})
		if err != nil {
			return
		}
		if len(frame) > int(max) || len(in) < 4+len(frame) || !bytes.Equal(frame, in[4:4+len(frame)]) {
			t.Fatalf("frame of %d bytes from %d input bytes, max %d", len(frame), len(in), max)
		}
	})
}
