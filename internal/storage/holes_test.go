package storage

import (
	"context"
	"testing"
)

// Recovery cuts a log where an unflushed segment ends below the next
// one's base (lostTail), so the cleaner must never leave such a hole: it
// keeps the last batch of each group it rewrites. Here key b's record in
// the second segment is superseded by the third's, and the cleaner, which
// cannot merge all four segments (segment.bytes), rewrites the first two
// as one group whose last batch holds nothing to keep. After a crash
// with no recovery point checkpointed (everything recovered), every key
// must read back.
func TestCleanedSegmentsSurviveRecovery(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 200 // one batch per segment, two rewritten together
	mc := ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: cfg}
	m, err := OpenManager(mc, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "c", Partition: 0}
	l, err := m.GetOrCreate(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "b", "c"} {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: k, value: "v-" + k}), 0)
		forceRoll(t, l)
	}
	mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: "d", value: "v-d"}), 0)
	if _, st, cleaned, err := m.CleanOnce(context.Background(), t0); !cleaned || err != nil || st.RecordsKept >= st.RecordsRead {
		t.Fatalf("CleanOnce: cleaned %v, %+v, %v; want a record removed", cleaned, st, err)
	}
	segs := l.segments()
	for i := 0; i+1 < len(segs); i++ {
		res, err := segs[i].scan(segs[i+1].base, 4096, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.stop != nil || res.next != segs[i+1].base {
			t.Fatalf("cleaned segment %d ends at %d, the next begins at %d (%v)", segs[i].base, res.next, segs[i+1].base, res.stop)
		}
	}
	if err := l.crash(); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenLog(l.Dir(), cfg, 0, 0, false, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	checkState(t, l2, map[string]string{"a": "v-a", "b": "v-b", "c": "v-c", "d": "v-d"}, "after the crash")
	if l2.LogEndOffset() != 5 {
		t.Fatalf("log end %d after recovery, want 5", l2.LogEndOffset())
	}
}
