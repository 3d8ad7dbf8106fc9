package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scanFrame reads one frame as a connection would and returns the Produce
// scan's cost.
func scanFrame(t testing.TB, frame []byte) ([]byte, int64, error) {
	t.Helper()
	fm, err := readWholeFrame(t, frame)
	return fm.buf, fm.produceCost, err
}

// readWholeFrame reads one whole frame as a connection does.
func readWholeFrame(t testing.TB, b []byte) (frame, error) {
	t.Helper()
	vt, err := newVersionTable(allAPIs())
	if err != nil {
		t.Fatal(err)
	}
	fr := &frameReader{br: bufio.NewReader(bytes.NewReader(b)), versions: vt,
		limits: frameLimits{maxBytes: 100 << 20, maxNonProduce: 100 << 20}}
	return fr.next(context.Background(), newMemPool(-1).reserve())
}

// produceFrame frames a Produce body by hand at version v.
func produceFrame(v int16, body []byte) []byte {
	b := []byte{0, 0, 0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(v))
	b = append(b, 0, 0, 0, 1, 0xff, 0xff) // correlation id, null client id
	if v >= 9 {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func honestProduce(v int16) kmsg.Request {
	p := kmsg.NewPtrProduceRequest()
	p.TransactionID = kmsg.StringPtr("txn")
	p.Acks = -1
	for ti := range 3 {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "topic-" + string(rune('a'+ti))
		t.TopicID[0] = byte(ti + 1)
		for pi := range 4 {
			part := kmsg.NewProduceRequestTopicPartition()
			part.Partition = int32(pi)
			part.Records = bytes.Repeat([]byte{byte(pi)}, 100+pi)
			t.Partitions = append(t.Partitions, part)
		}
		p.Topics = append(p.Topics, t)
	}
	p.SetVersion(v)
	return p
}

func TestScanProduceCostsHonestRequests(t *testing.T) {
	vt, _ := newVersionTable(allAPIs())
	for v := int16(3); v <= 13; v++ {
		frame := encodeRequest(honestProduce(v), v, 1, strp("c"))
		buf, cost, err := scanFrame(t, frame)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		p := parseRequest(buf, vt)
		if p.err != nil {
			t.Fatalf("v%d: parse: %v", v, p.err)
		}
		held := decodedSize(p.req) - int64(unsafe.Sizeof(kmsg.ProduceRequest{}))
		if cost < held/2 || cost > 2*held+256 {
			t.Errorf("v%d: scan cost %d, decoded request holds %d", v, cost, held)
		}
		if cost > int64(len(buf)) {
			t.Errorf("v%d: an honest request costs %d decoded for %d bytes", v, cost, len(buf))
		}
	}
}

func TestScanProduceRefusesBombs(t *testing.T) {
	// One partition whose tagged fields are a million distinct keys.
	tags := []byte{0, 0xff, 0xff, 0, 0, 0x75, 0x30, 2, 2, 't', 2, 0, 0, 0, 0, 0}
	tags = binary.AppendUvarint(tags, 1<<20)
	for k := range 1 << 20 {
		tags = binary.AppendUvarint(tags, uint64(1<<21+k))
		tags = append(tags, 0)
	}
	tags = append(tags, 0, 0)
	// v8: two million empty topic entries, 6 bytes each.
	const n = 2 << 20
	empty := []byte{0xff, 0xff, 0, 1, 0, 0, 0x75, 0x30}
	empty = binary.BigEndian.AppendUint32(empty, n)
	empty = append(empty, make([]byte, 6*n)...)
	for name, frame := range map[string][]byte{
		"tags v9":         produceFrame(9, tags),
		"empty topics v8": produceFrame(8, empty),
	} {
		buf, _, err := scanFrame(t, frame)
		if !errors.Is(err, errTooCostly) {
			t.Errorf("%s: %v, want errTooCostly", name, err)
		}
		// Refused early: well before the frame's end.
		if len(buf) > len(frame)/2 {
			t.Errorf("%s: %d of %d bytes read before refusing", name, len(buf), len(frame))
		}
	}
}

// FuzzScanProduce holds the Produce scan to kmsg: whatever kmsg decodes,
// the scan accepts and charges at least what the decoded request holds;
// whatever the scan calls malformed, kmsg refuses.
func FuzzScanProduce(f *testing.F) {
	vt, err := newVersionTable(allAPIs())
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range []int16{3, 7, 8, 9, 11, 12, 13} {
		frame := encodeRequest(honestProduce(v), v, 1, strp("fuzz"))
		f.Add(v, frame[4+10+6:]) // the body after header v1 with client id "fuzz"
	}
	f.Add(int16(9), []byte{0, 0, 1, 0, 0, 0, 1, 2, 2, 't', 2, 0, 0, 0, 0, 1, 3, 1, 2, 3, 4, 1, 5, 2, 0x80})
	f.Add(int16(9), []byte{0xff, 0xff, 0xff, 0xff, 0x1f})
	for _, v := range []int16{3, 9} {
		frame := encodeRequest(checkedProduce(f), v, 1, nil)
		hdr := 4 + 10 // size, key, version, correlation id, null client id
		if v >= 9 {
			hdr++ // no tagged fields
		}
		f.Add(v, frame[hdr:])
	}
	f.Fuzz(func(t *testing.T, v int16, body []byte) {
		if v < 3 || v > 13 {
			return
		}
		frame := produceFrame(v, body)
		buf, cost, err := scanFrame(t, frame)
		p := parseRequest(frame[4:], vt)
		switch {
		case errors.Is(err, errTooCostly):
			// Refused for its cost: kmsg may decode it or not.
		case err != nil:
			if p.err == nil {
				t.Fatalf("v%d: scan refused what kmsg decodes: %v", v, err)
			}
		default:
			if p.err != nil {
				t.Fatalf("v%d: kmsg refused what the scan accepted: %v", v, p.err)
			}
			if !bytes.Equal(buf, frame[4:]) {
				t.Fatalf("v%d: frame read back differs", v)
			}
			held := decodedSize(p.req) - int64(unsafe.Sizeof(kmsg.ProduceRequest{}))
			if held > 2*cost+256 {
				t.Fatalf("v%d: scan charged %d, decoded request holds %d", v, cost, held)
			}
			holdsChecked(t, frame, vt)
		}
	})
}
