package server

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// checkedProduce is a Produce request whose partitions hold, in turn:
// two good batches, a good batch then one with a bad CRC, a compressed
// batch, a magic 1 message, bytes that are no batch, no records at all,
// and a good batch again.
func checkedProduce(tb testing.TB) *kmsg.ProduceRequest {
	tb.Helper()
	build := func(opts recordbatch.BuildOptions, values ...string) []byte {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = -1, -1, -1
		var recs []recordbatch.Record
		for _, v := range values {
			recs = append(recs, recordbatch.Record{Value: []byte(v)})
		}
		b, err := recordbatch.Build(opts, recs)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	good := build(recordbatch.BuildOptions{}, "a", "b")
	badCRC := build(recordbatch.BuildOptions{}, "c")
	badCRC[len(badCRC)-1] ^= 1
	lz4 := build(recordbatch.BuildOptions{Compression: recordbatch.CompressionLZ4}, "d")
	magic1 := bytes.Clone(good)
	magic1[16] = 1
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 1
	t := kmsg.ProduceRequestTopic{Topic: "t"}
	for i, records := range [][]byte{
		bytes.Join([][]byte{good, build(recordbatch.BuildOptions{}, "e")}, nil),
		bytes.Join([][]byte{good, badCRC}, nil),
		lz4,
		magic1,
		[]byte("not a batch"),
		nil,
		good,
	} {
		t.Partitions = append(t.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(i), Records: records})
	}
	p.Topics = []kmsg.ProduceRequestTopic{t}
	return p
}

// TestScanChecksBatchesAhead: the Produce scan validates what it can as
// it arrives, and the handler finds it by the records it decoded.
func TestScanChecksBatchesAhead(t *testing.T) {
	vt, err := newVersionTable(allAPIs())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{3, 9, 12} {
		fm, err := readWholeFrame(t, encodeRequest(checkedProduce(t), v, 1, strp("c")))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		p := parseRequest(fm.buf, vt)
		if p.err != nil {
			t.Fatalf("v%d: %v", v, p.err)
		}
		want := []bool{true, false, false, false, false, false, true}
		for i, rp := range p.req.(*kmsg.ProduceRequest).Topics[0].Partitions {
			ck := fm.checked.lookup(rp.Records)
			if got := ck.Covers(rp.Records); got != want[i] {
				t.Errorf("v%d partition %d: checked ahead %v, want %v", v, i, got, want[i])
			}
			// The same bytes elsewhere are not the frame's.
			if fm.checked.lookup(bytes.Clone(rp.Records)).Valid() {
				t.Errorf("v%d partition %d: a copy of the records is found checked", v, i)
			}
		}
		if n := len(fm.checked.ranges); n != 2 {
			t.Errorf("v%d: %d ranges noted, want 2", v, n)
		}
	}
	var rc *RequestContext
	if rc.CheckedRecords([]byte("x")).Valid() {
		t.Error("a nil RequestContext has checked records")
	}
}

// holdsChecked checks, for the fuzz target, that every range the scan of
// frame noted as checked is exactly one decoded partition's records and
// that those pass validation, uncompressed; and that every partition
// made of valid uncompressed batches was noted.
func holdsChecked(t *testing.T, frameBytes []byte, vt *versionTable) {
	t.Helper()
	fm, err := readWholeFrame(t, frameBytes)
	if err != nil {
		t.Fatalf("second read: %v", err)
	}
	p := parseRequest(fm.buf, vt)
	if p.err != nil {
		t.Fatalf("second parse: %v", p.err)
	}
	found := 0
	for _, rt := range p.req.(*kmsg.ProduceRequest).Topics {
		for _, rp := range rt.Partitions {
			ck := fm.checked.lookup(rp.Records)
			valid := allValidUncompressed(rp.Records)
			if ck.Valid() {
				found++
				if !valid || !ck.Covers(rp.Records) {
					t.Fatalf("partition %d: noted checked, valid %v, covered %v", rp.Partition, valid, ck.Covers(rp.Records))
				}
			} else if valid {
				t.Fatalf("partition %d: valid records not noted", rp.Partition)
			}
		}
	}
	if found != len(fm.checked.ranges) {
		for _, r := range fm.checked.ranges {
			t.Logf("range %d+%d", r.start, r.n)
		}
		t.Fatalf("%d ranges noted, %d found among the decoded partitions (base %p)", len(fm.checked.ranges), found, unsafe.SliceData(fm.buf))
	}
}

func allValidUncompressed(records []byte) bool {
	if len(records) == 0 {
		return false
	}
	err := recordbatch.Split(records, func(b []byte, _ recordbatch.Header) error {
		h, err := recordbatch.Validate(b)
		if err == nil && h.Compression() != recordbatch.CompressionNone {
			return recordbatch.ErrCorrupt
		}
		return err
	})
	return err == nil
}
