package interop

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weir-project/weir/test/harness"
)

// TestListOffsetsByTime produces records with explicit timestamps and
// looks offsets up by time through kadm, a raw ListOffsets v7 and
// kafka-python's offsets_for_times (ListOffsets v1).
//
// Partition 0 has ten records one second apart, in two batches, so
// lookups fall inside a batch and between batches. Partition 1 has its
// largest timestamp in the middle, so "max timestamp" (-3) differs from
// "latest".
func TestListOffsetsByTime(t *testing.T) {
	const topic = "by-time"
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	createTopic(t, adm, topic, 2, nil)

	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	at := func(p int32, ts int64) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: p, Timestamp: time.UnixMilli(ts), Value: []byte("v")}
	}
	var first, second []*kgo.Record
	for i := range int64(10) {
		if i < 5 {
			first = append(first, at(0, base+i*1000))
		} else {
			second = append(second, at(0, base+i*1000))
		}
	}
	produceSync(t, cl, first...)
	produceSync(t, cl, second...)
	produceSync(t, cl, at(1, base), at(1, base+50_000), at(1, base+2000), at(1, base+3000))

	ctx := harness.Ctx(t, opTimeout)
	lookups := []struct {
		name   string
		millis int64
		offset int64
		ts     int64 // timestamp of the record found
	}{
		{"before the first", base - 5000, 0, base},
		{"inside a batch", base + 3500, 4, base + 4000},
		{"between batches", base + 4500, 5, base + 5000},
		{"exact", base + 7000, 7, base + 7000},
		{"exactly the last", base + 9000, 9, base + 9000},
	}
	for _, l := range lookups {
		lo, err := adm.ListOffsetsAfterMilli(ctx, l.millis, topic)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		o, ok := lo.Lookup(topic, 0)
		if !ok || o.Err != nil || o.Offset != l.offset || o.Timestamp != l.ts {
			t.Errorf("%s (%d): got %+v, want offset %d timestamp %d", l.name, l.millis-base, o, l.offset, l.ts)
		}
	}

	// After the last record: kadm falls back to the end offset; on the
	// wire (checked below) Kafka answers offset -1.
	lo, err := adm.ListOffsetsAfterMilli(ctx, base+9001, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lo.Lookup(topic, 0); o.Err != nil || o.Offset != 10 {
		t.Errorf("after the last: kadm gave %+v, want the end offset 10", o)
	}

	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32][2]int64{0: {0, 10}, 1: {0, 4}} {
		s, _ := starts.Lookup(topic, p)
		e, _ := ends.Lookup(topic, p)
		if s.Offset != want[0] || e.Offset != want[1] {
			t.Errorf("partition %d: earliest %d latest %d, want %d and %d", p, s.Offset, e.Offset, want[0], want[1])
		}
	}

	maxes, err := adm.ListMaxTimestampOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32][2]int64{0: {9, base + 9000}, 1: {1, base + 50_000}} {
		if o, _ := maxes.Lookup(topic, p); o.Err != nil || o.Offset != want[0] || o.Timestamp != want[1] {
			t.Errorf("partition %d max timestamp: got %+v, want offset %d timestamp %d", p, o, want[0], want[1])
		}
	}

	t.Run("raw v7", func(t *testing.T) {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.ListOffsets.Int16(), 7)
		raw := b.Client(kgo.MaxVersions(vs))
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, q := range []struct {
			p  int32
			ts int64
		}{{0, base + 9001}, {1, -3}} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = q.p, q.ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(harness.Ctx(t, opTimeout), raw)
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetVersion() != 7 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("unexpected answer (v%d): %+v", resp.GetVersion(), resp)
		}
		for _, p := range resp.Topics[0].Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("partition %d: %v", p.Partition, err)
			}
			switch p.Partition {
			case 0:
				if p.Offset != -1 || p.Timestamp != -1 {
					t.Errorf("after the last record: offset %d timestamp %d, want -1 and -1", p.Offset, p.Timestamp)
				}
			case 1:
				if p.Offset != 1 || p.Timestamp != base+50_000 {
					t.Errorf("max timestamp: offset %d timestamp %d, want 1 and %d", p.Offset, p.Timestamp, base+50_000)
				}
			}
		}
	})

	t.Run(kafkaPython, func(t *testing.T) {
		needPython(t, kafkaPython, "none")
		type answer struct {
			Beginning *int64 `json:"beginning"`
			End       *int64 `json:"end"`
			Time      int64  `json:"time"`
			Offset    *int64 `json:"offset"`
			Timestamp *int64 `json:"timestamp"`
		}
		times := []int64{base - 5000, base + 3500, base + 4500, base + 9001}
		out := jsonLines[answer](t, runPy(t, pySpec{Client: kafkaPython, Op: "offsets_for_times", Bootstrap: b.Addr, Topic: topic, Partition: 0, Times: times}))
		if len(out) != 1+len(times) {
			t.Fatalf("%d answers, want %d", len(out), 1+len(times))
		}
		if out[0].Beginning == nil || *out[0].Beginning != 0 || out[0].End == nil || *out[0].End != 10 {
			t.Errorf("beginning/end offsets: %+v, want 0 and 10", out[0])
		}
		want := []*int64{ptr(int64(0)), ptr(int64(4)), ptr(int64(5)), nil}
		for i, a := range out[1:] {
			switch {
			case want[i] == nil && a.Offset != nil:
				t.Errorf("offsets_for_times(%d) = %d, want None (after the last record)", a.Time-base, *a.Offset)
			case want[i] != nil && (a.Offset == nil || *a.Offset != *want[i]):
				t.Errorf("offsets_for_times(%d) = %v, want %d", a.Time-base, a.Offset, *want[i])
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
