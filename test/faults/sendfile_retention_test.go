package faults

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// TestRetentionDeletesSegmentBeingSent: a fetch response carrying a
// 16 MiB segment goes to a client that reads it slowly (an 8 KiB receive
// buffer: most of it waits in the broker). While it waits, retention
// deletes that segment; the broker keeps the file open (unlinked) until
// the response is written, the client gets every batch intact, and the
// descriptor is closed once the response is out.
//
// Deterministic: the deletion is observed (the broker holds a descriptor
// of the unlinked segment) before the client reads on, and 16 MiB cannot
// fit in the kernel's buffers (tcp_wmem's 4 MiB at most, plus the
// client's 8 KiB window), so the send is still in flight then.
func TestRetentionDeletesSegmentBeingSent(t *testing.T) {
	b := harness.StartBroker(t,
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	b.Watch(t, 2<<30, 10000)
	const topic, segment = "sent-while-deleted", 16 << 20
	segBytes := fmt.Sprint(segment)
	createTopic(t, b, topic, 1, map[string]*string{"segment.bytes": &segBytes})

	// A little over one segment of 64 KiB batches of 1000-byte records.
	cl := b.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10))
	ctx := harness.Ctx(t, opTimeout)
	value := bytes.Repeat([]byte("v"), 1000)
	const n = segment/1000 + 2000
	for i := 0; i < n; i += 1000 {
		recs := make([]*kgo.Record, 1000)
		for j := range recs {
			recs[j] = &kgo.Record{Topic: topic, Value: value}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	segDir := filepath.Join(b.Dir, topic+"-0")
	first := filepath.Join(segDir, "00000000000000000000.log")
	harness.WaitFor(t, opTimeout, "the first segment rolled", func() bool {
		ents, _ := os.ReadDir(segDir)
		logs := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".log") {
				logs++
			}
		}
		return logs >= 2
	})

	// The slow reader: its receive buffer is set before it connects,
	// so the window stays small.
	d := net.Dialer{Timeout: opTimeout, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 50<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset = 0, 0, 32<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := nc.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(frame(req, 1)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		t.Fatalf("read response size: %v", err)
	}
	if got := binary.BigEndian.Uint32(size[:]); got < segment/2 {
		t.Fatalf("response of %d bytes, want most of a %d-byte segment", got, segment)
	}

	// Retention deletes every segment but the active one.
	adm := kadm.NewClient(b.Client())
	one := "1"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: &one}}, topic); err != nil {
		t.Fatalf("alter retention.bytes: %v", err)
	}
	harness.WaitFor(t, opTimeout, "retention deleted the first segment while the broker still has it open", func() bool {
		_, statErr := os.Stat(first)
		return os.IsNotExist(statErr) && len(openDeleted(t, b.PID(), segDir)) > 0
	})

	// The rest of the response, intact.
	rest := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, rest); err != nil {
		t.Fatalf("read response after the segment was deleted: %v", err)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	if err := resp.ReadFrom(rest[5:]); err != nil { // correlation id, header tags
		t.Fatalf("decode fetch response: %v", err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("fetch error code %d", sp.ErrorCode)
	}
	next := checkBatches(t, sp.RecordBatches)
	if next < segment/1100 {
		t.Fatalf("got offsets [0, %d), want about one segment's worth", next)
	}
	harness.WaitFor(t, opTimeout, "the deleted segment's descriptor closed after the send", func() bool {
		return len(openDeleted(t, b.PID(), segDir)) == 0
	})
	assertCleanLog(t, b)
}

// openDeleted lists the broker's descriptors of unlinked files in dir.
func openDeleted(t *testing.T, pid int, dir string) []string {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatalf("list %s: %v", fdDir, err)
	}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err == nil && strings.HasPrefix(target, dir) && strings.HasSuffix(target, " (deleted)") {
			out = append(out, target)
		}
	}
	return out
}

// checkBatches verifies the record batches' CRCs and that their offsets
// run on from 0 without a gap; it returns the offset after the last. A
// partial batch at the end (as Kafka may send) is ignored.
func checkBatches(t *testing.T, b []byte) int64 {
	t.Helper()
	table := crc32.MakeTable(crc32.Castagnoli)
	var next int64
	for len(b) >= 12 {
		size := 12 + int(binary.BigEndian.Uint32(b[8:]))
		if size > len(b) {
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatalf("batch at offset %d: %v", next, err)
		}
		if rb.FirstOffset != next {
			t.Fatalf("batch at offset %d, want %d", rb.FirstOffset, next)
		}
		if got := crc32.Checksum(b[21:size], table); got != uint32(rb.CRC) {
			t.Fatalf("batch at offset %d: CRC %08x, computed %08x", next, uint32(rb.CRC), got)
		}
		next += int64(rb.LastOffsetDelta) + 1
		b = b[size:]
	}
	return next
}
