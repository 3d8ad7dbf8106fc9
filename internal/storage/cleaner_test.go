package storage

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

var t0 = time.UnixMilli(1_700_000_000_000)

// cleanAt runs one pass at now with the default map budget.
func cleanAt(t testing.TB, l *Log, now time.Time) CleanStats {
	t.Helper()
	st, err := l.Clean(context.Background(), CleanOptions{Now: now})
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	return st
}

func TestCleanerCodecsAndTimestampTypes(t *testing.T) {
	for _, codec := range []recordbatch.Compression{recordbatch.CompressionNone, recordbatch.CompressionGzip,
		recordbatch.CompressionSnappy, recordbatch.CompressionLZ4, recordbatch.CompressionZstd} {
		for _, appendTime := range []bool{false, true} {
			cfg := compactConfig()
			cfg.LogAppendTime = appendTime
			l := openLog(t, t.TempDir(), cfg)
			o := batchOpts{ts: t0.UnixMilli(), codec: codec, timestamps: []int64{5, -3, 9}}
			mustAppend(t, l, keyedBatch(t, o, kv{key: "a", value: "a1"}, kv{key: "b", value: "b1"}, kv{key: "c", value: "c1"}), 3)
			mustAppend(t, l, keyedBatch(t, o, kv{key: "a", value: "a2"}, kv{key: "d", value: "d1"}, kv{key: "c", tomb: true}), 4)
			forceRoll(t, l)
			before, _ := allRecords(t, l)
			st := cleanAt(t, l, t0)
			recs, hdrs := allRecords(t, l)
			if st.RecordsRead != 6 || st.RecordsKept != 4 || len(recs) != 4 {
				t.Fatalf("codec %d appendTime %v: stats %+v, %d records", codec, appendTime, st, len(recs))
			}
			want := []int64{1, 3, 4, 5} // b1, a2, d1, the tombstone of c
			for i, r := range recs {
				if r.offset != want[i] || r.ts != before[r.offset].ts || !bytes.Equal(r.value, before[r.offset].value) {
					t.Fatalf("codec %d appendTime %v: record %d = %+v, was %+v", codec, appendTime, i, r, before[r.offset])
				}
			}
			for _, h := range hdrs {
				if h.Compression() != codec || h.LogAppendTime() != appendTime || h.PartitionLeaderEpoch != int32(3+h.BaseOffset/3) {
					t.Fatalf("codec %d appendTime %v: header %+v", codec, appendTime, h)
				}
			}
			if hz, set := hdrs[1].DeleteHorizon(); !set || hz != t0.UnixMilli()+cfg.DeleteRetentionMs {
				t.Fatalf("batch holding a tombstone: horizon %d set %v", hz, set)
			}
			if _, set := hdrs[0].DeleteHorizon(); set {
				t.Fatal("horizon set on a batch without tombstones")
			}
		}
	}
}

func TestCleanerRemovesTombstonesAfterDeleteRetention(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 10_000
	l := openLog(t, t.TempDir(), cfg)
	o := batchOpts{ts: t0.UnixMilli()}
	mustAppend(t, l, keyedBatch(t, o, kv{key: "k", value: "v"}, kv{key: "x", value: "x"}), 0)
	mustAppend(t, l, keyedBatch(t, o, kv{key: "k", tomb: true}), 0)
	forceRoll(t, l)
	mustAppend(t, l, keyedBatch(t, o, kv{key: "y", value: "y"}), 0) // stays in the active segment

	cleanAt(t, l, t0) // the value goes, the tombstone stays with a horizon
	recs := checkState(t, l, map[string]string{"x": "x", "y": "y"}, "first pass")
	if len(recs) != 3 || recs[1].key != "k" || recs[1].value != nil {
		t.Fatalf("after first pass: %+v", recs)
	}
	cleanAt(t, l, t0.Add(9999*time.Millisecond))
	if recs, _ := allRecords(t, l); len(recs) != 3 {
		t.Fatalf("tombstone removed before delete.retention.ms: %+v", recs)
	}
	st := cleanAt(t, l, t0.Add(10*time.Second))
	recs = checkState(t, l, map[string]string{"x": "x", "y": "y"}, "after retention")
	if len(recs) != 2 || st.TombstonesRemoved != 1 {
		t.Fatalf("after delete.retention.ms: %+v, stats %+v", recs, st)
	}
	// The emptied batch was the last of its segment: kept, without records,
	// so the segment still ends where it did.
	_, hdrs := allRecords(t, l)
	if len(hdrs) != 3 || hdrs[1].BaseOffset != 2 || hdrs[1].RecordCount != 0 {
		t.Fatalf("headers %+v", hdrs)
	}
	if _, set := hdrs[1].DeleteHorizon(); set {
		t.Fatal("empty batch kept its delete horizon")
	}
}

func TestCleanerMinCompactionLag(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCompactionLagMs = time.Hour.Milliseconds()
	l := openLog(t, t.TempDir(), cfg)
	for i := range 4 {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli() + int64(i)}, kv{key: "k", value: "v"}), 0)
		forceRoll(t, l)
	}
	before := segmentBytes(t, l)
	if st := cleanAt(t, l, t0.Add(59*time.Minute)); st.SegmentsIn != 0 {
		t.Fatalf("cleaned records younger than min.compaction.lag.ms: %+v", st)
	}
	if !maps.EqualFunc(before, segmentBytes(t, l), bytes.Equal) || l.CleanerCheckpoint() != 0 {
		t.Fatal("log changed though nothing was old enough")
	}
	if r := l.DirtyRatio(t0.Add(59 * time.Minute)); r != 0 {
		t.Fatalf("dirty ratio %v counts young segments", r)
	}
	// An hour after the first two records, only the two oldest segments qualify.
	st := cleanAt(t, l, t0.Add(time.Hour+time.Millisecond))
	if st.SegmentsIn != 2 || st.End != 2 {
		t.Fatalf("stats %+v, want the two oldest segments", st)
	}
	recs, _ := allRecords(t, l)
	if len(recs) != 3 || recs[0].offset != 1 {
		t.Fatalf("records %+v", recs)
	}
}

func TestCleanerDirtyRatioAndManagerChoice(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.5
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Defaults: cfg}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	hot, err := m.GetOrCreate(TopicPartition{Topic: "hot", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain := testConfig()
	cold, err := m.GetOrCreate(TopicPartition{Topic: "plain", Partition: 0}, plain)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(l *Log, k string) {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: k, value: "some value of a fair size"}), 0)
		forceRoll(t, l)
	}
	for i := range 4 {
		batch(hot, "k"+string(rune('a'+i)))
		batch(cold, "same")
	}
	if r := hot.DirtyRatio(t0); r != 1 {
		t.Fatalf("never-cleaned log: dirty ratio %v", r)
	}
	tp, st, cleaned, err := m.CleanOnce(context.Background(), t0)
	if err != nil || !cleaned || tp.Topic != "hot" || st.End != 4 {
		t.Fatalf("CleanOnce = %v %+v %v %v", tp, st, cleaned, err)
	}
	if r := hot.DirtyRatio(t0); r != 0 {
		t.Fatalf("after cleaning: dirty ratio %v", r)
	}
	// One dirty segment beside four clean ones: 1/5 < 0.5, nothing to do;
	// the log that is not compacted is never a candidate.
	batch(hot, "ka")
	if r := hot.DirtyRatio(t0); math.Abs(r-0.2) > 0.01 {
		t.Fatalf("dirty ratio %v, want 0.2", r)
	}
	if _, _, cleaned, err := m.CleanOnce(context.Background(), t0); cleaned || err != nil {
		t.Fatalf("cleaned below min.cleanable.dirty.ratio: %v %v", cleaned, err)
	}
	for _, k := range []string{"kb", "kc", "kd"} {
		batch(hot, k)
	}
	if _, st, cleaned, err := m.CleanOnce(context.Background(), t0); !cleaned || err != nil || st.FirstDirty != 4 || st.End != 8 {
		t.Fatalf("CleanOnce above the ratio: %+v %v %v", st, cleaned, err)
	}
	checkState(t, hot, map[string]string{"ka": "some value of a fair size", "kb": "some value of a fair size",
		"kc": "some value of a fair size", "kd": "some value of a fair size"}, "hot")
	if recs, _ := allRecords(t, cold); len(recs) != 4 {
		t.Fatalf("the non-compacted log lost records: %d", len(recs))
	}
}

func TestCleanerRespectsCleanableLimit(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	for range 3 {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: "k", value: "v"}), 0)
		forceRoll(t, l)
	}
	l.SetCleanableLimit(1) // say the high watermark is 1: only segment 0 is committed
	if st := cleanAt(t, l, t0); st.SegmentsIn != 1 || st.End != 1 {
		t.Fatalf("stats %+v", st)
	}
	if recs, _ := allRecords(t, l); len(recs) != 3 {
		t.Fatalf("records above the limit were compacted: %+v", recs)
	}
	l.SetCleanableLimit(3)
	if st := cleanAt(t, l, t0); st.End != 3 {
		t.Fatalf("stats %+v", st)
	}
	if recs, _ := allRecords(t, l); len(recs) != 1 || recs[0].offset != 2 {
		t.Fatalf("records %+v", recs)
	}
}

func TestAppendToCompactedLogRequiresKeys(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	keyless, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]recordbatch.Record{{Key: []byte("k"), Value: []byte("v")}, {Value: []byte("no key")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(bytes.Clone(keyless), 0); !errors.Is(err, recordbatch.ErrInvalidRecord) {
		t.Fatalf("keyless record in a compacted log: %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatal("refused batch was written")
	}
	plain := openLog(t, t.TempDir(), testConfig())
	if _, err := plain.Append(bytes.Clone(keyless), 0); err != nil {
		t.Fatalf("keyless record in a plain log: %v", err)
	}
}

func TestCleanerTransactionalAndProducerBatches(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	o := batchOpts{ts: t0.UnixMilli()}
	mustAppend(t, l, keyedBatch(t, o, kv{key: "a", value: "a0"}, kv{key: "b", value: "b0"}), 0) // 0-1
	txn := batchOpts{ts: t0.UnixMilli(), pid: 9, txn: true}
	mustAppend(t, l, keyedBatch(t, txn, kv{key: "a", value: "a-txn"}, kv{key: "c", value: "c-txn"}), 0) // 2-3
	idem := batchOpts{ts: t0.UnixMilli(), pid: 5, seq: 0}
	mustAppend(t, l, keyedBatch(t, idem, kv{key: "c", value: "c1"}), 0) // 4
	idem.seq = 1
	mustAppend(t, l, keyedBatch(t, idem, kv{key: "b", value: "b1"}), 0)                        // 5
	mustAppend(t, l, keyedBatch(t, o, kv{key: "b", value: "b2"}, kv{key: "z", value: "z"}), 0) // 6-7
	forceRoll(t, l)
	cleanAt(t, l, t0)
	recs, hdrs := allRecords(t, l)
	// a0 survives: a transactional record may belong to an aborted
	// transaction, so it hides nothing. c-txn is hidden by c1.
	var offs []int64
	for _, r := range recs {
		offs = append(offs, r.offset)
	}
	if want := []int64{0, 2, 4, 6, 7}; !equalInts(offs, want) {
		t.Fatalf("offsets kept %v, want %v", offs, want)
	}
	// Producer 5's last batch (offset 5) lost its record but stays, empty,
	// with its sequence.
	var found bool
	for _, h := range hdrs {
		if h.BaseOffset == 5 {
			found = h.RecordCount == 0 && h.ProducerID == 5 && h.BaseSequence == 1 && h.LastOffsetDelta == 0
		}
	}
	if !found {
		t.Fatalf("last batch of producer 5 not kept as an empty batch: %+v", hdrs)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCleanerGroupsSmallSegments(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 4096
	l := openLog(t, t.TempDir(), cfg)
	for i := range 12 {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: "k" + string(rune('a'+i%3)), value: string(bytes.Repeat([]byte{'v'}, 300))}), 0)
		forceRoll(t, l)
	}
	st := cleanAt(t, l, t0)
	if st.SegmentsIn != 12 || st.SegmentsOut >= 12 || st.SegmentsOut < 1 {
		t.Fatalf("stats %+v", st)
	}
	if l.NumSegments() != st.SegmentsOut+1 {
		t.Fatalf("%d segments, %d cleaned + active", l.NumSegments(), st.SegmentsOut)
	}
	for _, s := range l.segments() {
		if s.size.Load() > cfg.SegmentBytes {
			t.Fatalf("cleaned segment %d is %d bytes", s.base, s.size.Load())
		}
	}
	recs := checkState(t, l, map[string]string{"ka": string(bytes.Repeat([]byte{'v'}, 300)),
		"kb": string(bytes.Repeat([]byte{'v'}, 300)), "kc": string(bytes.Repeat([]byte{'v'}, 300))}, "grouped")
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	// Reopen (trusted path) and recover (rescan) both accept the result.
	cfgClose := l.Close()
	if cfgClose != nil {
		t.Fatal(cfgClose)
	}
	for _, clean := range []bool{true, false} {
		l2, err := OpenLog(l.Dir(), cfg, 0, 0, clean, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		checkState(t, l2, applyRecords(recs), "reopened")
		l2.Close()
	}
}

func TestCleanerAbortsWhenTheLogChanges(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	for range 3 {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: "k", value: "v"}), 0)
		forceRoll(t, l)
	}
	st, err := l.Clean(context.Background(), CleanOptions{Now: t0, stage: func(name string) {
		if name == stageCleaned {
			if _, err := l.DeleteRecordsBefore(2); err != nil {
				t.Error(err)
			}
		}
	}})
	if !errors.Is(err, errCleanAborted) {
		t.Fatalf("Clean = %+v, %v; want an abort", st, err)
	}
	// Retention's *.deleted files go on a timer: wait for them too.
	waitFor(t, func() bool { return len(leftovers(t, l.Dir())) == 0 })
	if l.CleanerCheckpoint() != 0 {
		t.Fatal("checkpoint moved by an aborted pass")
	}
	cleanAt(t, l, t0)
	if recs, _ := allRecords(t, l); len(recs) != 1 || recs[0].offset != 2 {
		t.Fatalf("records %+v", recs)
	}
}

func TestCleanerCheckpointFollowsTruncation(t *testing.T) {
	l := openLog(t, t.TempDir(), compactConfig())
	for range 4 {
		mustAppend(t, l, keyedBatch(t, batchOpts{ts: t0.UnixMilli()}, kv{key: "k", value: "v"}), 0)
		forceRoll(t, l)
	}
	cleanAt(t, l, t0)
	if l.CleanerCheckpoint() != 4 {
		t.Fatalf("checkpoint %d", l.CleanerCheckpoint())
	}
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if l.CleanerCheckpoint() != 2 {
		t.Fatalf("checkpoint %d after truncation to 2", l.CleanerCheckpoint())
	}
}

// TestFollowerReplicatesCleanedLog copies a compacted leader log, with its
// offset gaps, to a follower through AppendAsFollower.
func TestFollowerReplicatesCleanedLog(t *testing.T) {
	leader := openLog(t, t.TempDir(), compactConfig())
	o := batchOpts{ts: t0.UnixMilli()}
	for i := range 20 {
		mustAppend(t, leader, keyedBatch(t, o, kv{key: "k" + string(rune('a'+i%4)), value: "v"}, kv{key: "x", value: "x"}), 0)
		if i%5 == 4 {
			forceRoll(t, leader)
		}
	}
	cleanAt(t, leader, t0)
	want := batchesByBase(t, leader)
	if _, ok := want[0]; ok {
		t.Fatal("the test needs the first batch cleaned away")
	}
	follower := openLog(t, t.TempDir(), compactConfig())
	for _, b := range readAll(t, leader, 0) {
		if _, err := follower.AppendAsFollower(bytes.Clone(b.data)); err != nil {
			t.Fatalf("follower append at %d: %v", b.base, err)
		}
	}
	if follower.LogEndOffset() != leader.LogEndOffset() || !maps.EqualFunc(batchesByBase(t, follower), want, bytes.Equal) {
		t.Fatal("follower log differs from the leader's")
	}
	if _, err := follower.AppendAsFollower(bytes.Clone(readAll(t, leader, 0)[0].data)); !errors.Is(err, ErrUnexpectedOffset) {
		t.Fatalf("a batch below the log end: %v", err)
	}
}
