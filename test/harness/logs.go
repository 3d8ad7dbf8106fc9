package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// StoredBatch is one batch as a broker's segment files hold it.
type StoredBatch struct {
	BaseOffset, LastOffset int64
	LeaderEpoch            int32
	CRC                    uint32
}

func (b StoredBatch) String() string {
	return fmt.Sprintf("[%d..%d e%d crc %08x]", b.BaseOffset, b.LastOffset, b.LeaderEpoch, b.CRC)
}

// StoredBatches reads the batches of a partition straight from a log
// dir's segment files (the broker should be stopped, or the tail may be
// cut short), in offset order.
func StoredBatches(t testing.TB, dir, topic string, partition int32) []StoredBatch {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, topic+"-"+strconv.Itoa(int(partition)), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(segs) // 20-digit base offsets sort as numbers
	var out []StoredBatch
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatalf("read %s: %v", s, err)
		}
		for pos := 0; pos < len(data); {
			h, err := recordbatch.ParseHeader(data[pos:])
			if err != nil || h.Size() > int64(len(data)-pos) {
				break // a torn tail: recovery cuts it at the next start
			}
			out = append(out, StoredBatch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), LeaderEpoch: h.PartitionLeaderEpoch, CRC: h.CRC})
			pos += int(h.Size())
		}
	}
	return out
}

// PartitionValues reads every record of a partition, from its log start
// to its high watermark, through a client seeded with addrs, and returns
// the values by offset.
func PartitionValues(t testing.TB, addrs []string, topic string, partition int32) map[int64]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RetryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	var start, end int64
	WaitFor(t, time.Minute, fmt.Sprintf("the offsets of %s-%d", topic, partition), func() bool {
		s, err1 := adm.ListStartOffsets(ctx, topic)
		e, err2 := adm.ListEndOffsets(ctx, topic)
		if err1 != nil || err2 != nil {
			return false
		}
		so, ok1 := s.Lookup(topic, partition)
		eo, ok2 := e.Lookup(topic, partition)
		if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
			return false
		}
		start, end = so.Offset, eo.Offset
		return true
	})
	out := map[int64]string{}
	if end <= start {
		return out
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(start)}})
	for next := start; next < end; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s-%d: at offset %d of %d when the deadline passed", topic, partition, next, end)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition == partition && r.Offset < end {
				out[r.Offset] = string(r.Value)
				next = max(next, r.Offset+1)
			}
		})
	}
	return out
}
