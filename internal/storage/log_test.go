package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weir-project/weir/internal/storage/recordbatch"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	var want [][]byte
	for i := range 10 {
		info, stored := mustAppend(t, l, makeBatch(t, 3, 50, 1000+int64(i), "b"), 1)
		if info.FirstOffset != int64(i*3) || info.LastOffset != int64(i*3+2) || info.NumRecords != 3 {
			t.Fatalf("append %d: info %+v", i, info)
		}
		want = append(want, stored)
	}
	if l.LogEndOffset() != 30 {
		t.Fatalf("LEO %d, want 30", l.LogEndOffset())
	}
	got := readAll(t, l, 0)
	if len(got) != 10 {
		t.Fatalf("read %d batches, want 10", len(got))
	}
	for i, b := range got {
		if !bytes.Equal(b.data, want[i]) {
			t.Fatalf("batch %d differs", i)
		}
		h, _ := recordbatch.ParseHeader(b.data)
		if h.PartitionLeaderEpoch != 1 || h.BaseOffset != int64(i*3) {
			t.Fatalf("batch %d header %+v", i, h)
		}
	}
	// An offset inside a batch returns that batch.
	r, err := l.Read(4, 1, -1)
	if err != nil || r.FirstOffset != 3 || r.Len != int64(len(want[1])) {
		t.Fatalf("Read(4) = %+v, %v", r, err)
	}
}

func TestReadBounds(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	for i := range 5 {
		mustAppend(t, l, makeBatch(t, 2, 100, int64(i), "x"), 0)
	}
	if _, err := l.Read(11, 100, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 100, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read negative: %v", err)
	}
	if r, err := l.Read(10, 100, -1); err != nil || r.Len != 0 {
		t.Fatalf("read at LEO: %+v %v", r, err)
	}
	// maxOffset (high watermark) excludes batches starting at or above it.
	r, err := l.Read(0, 1<<20, 4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Bytes()
	if bs := splitBatches(t, b); len(bs) != 2 || bs[1].last != 3 {
		t.Fatalf("maxOffset 4: got %d batches", len(bs))
	}
	if r, err := l.Read(4, 1<<20, 4); err != nil || r.Len != 0 {
		t.Fatalf("read at HW: %+v %v", r, err)
	}
	// maxBytes smaller than a batch still returns one batch; larger is cut at batch boundaries.
	one, _ := l.Read(0, 1, -1)
	two, _ := l.Read(0, int(one.Len)*2+10, -1)
	if two.Len != one.Len*2 {
		t.Fatalf("maxBytes: one %d two %d", one.Len, two.Len)
	}
}

func TestAppendValidation(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 2000
	l := openLog(t, t.TempDir(), cfg)
	good := makeBatch(t, 1, 10, 1, "g")
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xff
	big := makeBatch(t, 1, 3000, 1, "big")
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"crc", corrupt, recordbatch.ErrCorrupt},
		{"too large", big, ErrMessageTooLarge},
		{"empty", nil, recordbatch.ErrCorrupt},
		{"torn", good[:len(good)-3], recordbatch.ErrCorrupt},
		// A bad second batch rejects the first one too.
		{"second bad", append(bytes.Clone(good), corrupt...), recordbatch.ErrCorrupt},
	}
	for _, c := range cases {
		if _, err := l.Append(bytes.Clone(c.in), 0); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected appends wrote: LEO %d size %d", l.LogEndOffset(), l.Size())
	}
	cfg.SegmentBytes = 50
	l.SetConfig(cfg)
	if _, err := l.Append(bytes.Clone(good), 0); !errors.Is(err, ErrRecordListTooLarge) {
		t.Fatalf("set larger than segment: %v", err)
	}
}

func TestRollBySizeAndIndexes(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 300
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	var want [][]byte
	for i := range 60 {
		_, s := mustAppend(t, l, makeBatch(t, 2, 100, int64(1000+i), "r"), 0)
		want = append(want, s)
	}
	if l.NumSegments() < 5 {
		t.Fatalf("only %d segments", l.NumSegments())
	}
	for _, s := range l.segments() {
		if s.size.Load() > cfg.SegmentBytes {
			t.Fatalf("segment %d is %d bytes", s.base, s.size.Load())
		}
	}
	// Rolled segments are fsynced: recovery point is the active base.
	waitRollFlushed(t, l)
	if rp := l.RecoveryPoint(); rp != l.active().base {
		t.Fatalf("recovery point %d, active base %d", rp, l.active().base)
	}
	for off := int64(0); off < l.LogEndOffset(); off++ {
		r, err := l.Read(off, 1, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.Bytes()
		if !bytes.Equal(b, want[off/2]) {
			t.Fatalf("offset %d: wrong batch", off)
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(names) != l.NumSegments() || filepath.Base(names[0]) != "00000000000000000000.log" {
		t.Fatalf("files %v", names)
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1
	cfg.SegmentIndexBytes = 8 * 4 // 4 offset-index entries, 2 time-index entries
	l := openLog(t, t.TempDir(), cfg)
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, 1, 10, int64(i), "f"), 0)
	}
	if l.NumSegments() < 5 {
		t.Fatalf("index-full rolls: %d segments", l.NumSegments())
	}
	if got := readAll(t, l, 0); len(got) != 20 {
		t.Fatalf("read %d batches", len(got))
	}
}

func TestMaybeRollBySegmentMs(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 60000
	l := openLog(t, t.TempDir(), cfg)
	if err := l.MaybeRoll(time.Now().Add(time.Hour)); err != nil || l.NumSegments() != 1 {
		t.Fatalf("empty segment rolled: %v %d", err, l.NumSegments())
	}
	mustAppend(t, l, makeBatch(t, 1, 10, 1, "m"), 0)
	if err := l.MaybeRoll(time.Now()); err != nil || l.NumSegments() != 1 {
		t.Fatalf("young segment rolled: %v", err)
	}
	if err := l.MaybeRoll(time.Now().Add(2 * time.Minute)); err != nil || l.NumSegments() != 2 {
		t.Fatalf("old segment not rolled: %v, %d segments", err, l.NumSegments())
	}
	if l.active().base != 1 {
		t.Fatalf("new segment base %d", l.active().base)
	}
}

func TestLogAppendTime(t *testing.T) {
	cfg := testConfig()
	cfg.LogAppendTime = true
	l := openLog(t, t.TempDir(), cfg)
	before := time.Now().UnixMilli()
	info, stored := mustAppend(t, l, makeBatch(t, 2, 10, 5, "t"), 0)
	if info.LogAppendTime < before || info.MaxTimestamp != info.LogAppendTime {
		t.Fatalf("info %+v", info)
	}
	h, err := recordbatch.Validate(stored)
	if err != nil || !h.LogAppendTime() || h.MaxTimestamp != info.LogAppendTime {
		t.Fatalf("stored header %+v, %v", h, err)
	}
}

func TestAppendAsFollower(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	b := makeBatch(t, 3, 10, 1, "f")
	recordbatch.SetBaseOffset(b, 0)
	recordbatch.SetPartitionLeaderEpoch(b, 4)
	c := makeBatch(t, 2, 10, 2, "f")
	recordbatch.SetBaseOffset(c, 3)
	recordbatch.SetPartitionLeaderEpoch(c, 5)
	info, err := l.AppendAsFollower(append(bytes.Clone(b), c...))
	if err != nil || info.FirstOffset != 0 || info.LastOffset != 4 || l.LogEndOffset() != 5 {
		t.Fatalf("follower append: %+v %v", info, err)
	}
	if e, s, ok := l.LeaderEpochs().Latest(); !ok || e != 5 || s != 3 {
		t.Fatalf("epochs latest %d %d %v", e, s, ok)
	}
	if _, err := l.AppendAsFollower(bytes.Clone(c)); !errors.Is(err, ErrUnexpectedOffset) {
		t.Fatalf("gap: %v", err)
	}
}

func TestLeaderEpochAssign(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig())
	mustAppend(t, l, makeBatch(t, 2, 10, 1, "e"), 1)
	mustAppend(t, l, makeBatch(t, 2, 10, 1, "e"), 1)
	mustAppend(t, l, makeBatch(t, 2, 10, 1, "e"), 3)
	ents := l.LeaderEpochs().Entries()
	if len(ents) != 2 || ents[0].Epoch != 1 || ents[0].StartOffset != 0 || ents[1].Epoch != 3 || ents[1].StartOffset != 4 {
		t.Fatalf("entries %+v", ents)
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if ents := l.LeaderEpochs().Entries(); len(ents) != 1 {
		t.Fatalf("after truncate: %+v", ents)
	}
}

func TestTimestampLookups(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 200
	l := openLog(t, t.TempDir(), cfg)
	// Batch i holds records stamped 1000+10i .. 1000+10i+2.
	for i := range 40 {
		mustAppend(t, l, makeBatch(t, 3, 80, 1000+10*int64(i), "ts"), 0)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, got %d", l.NumSegments())
	}
	// Lookups answer by record, as Kafka does: the first record stamped
	// at or after the time, with its own timestamp.
	for i := range 40 {
		first := 1000 + 10*int64(i)
		for _, c := range []struct{ ts, off, got int64 }{
			{first - 5, int64(3 * i), first},
			{first + 1, int64(3*i + 1), first + 1},
			{first + 2, int64(3*i + 2), first + 2},
		} {
			off, got, ok, err := l.OffsetForTimestamp(c.ts)
			if err != nil || !ok || off != c.off || got != c.got {
				t.Fatalf("ts %d: off %d ts %d ok %v err %v; want off %d ts %d", c.ts, off, got, ok, err, c.off, c.got)
			}
		}
	}
	if _, _, ok, _ := l.OffsetForTimestamp(99999); ok {
		t.Fatal("found offset for future timestamp")
	}
	ts, off := l.MaxTimestamp()
	if ts != 1000+390+2 || off != 119 {
		t.Fatalf("MaxTimestamp = %d, %d", ts, off)
	}
	// The max timestamp survives a clean restart (final time-index entry).
	dir := l.Dir()
	l.Close()
	l2 := openLog(t, dir, cfg)
	if ts2, off2 := l2.MaxTimestamp(); ts2 != ts || off2 != off {
		t.Fatalf("after reopen MaxTimestamp = %d, %d", ts2, off2)
	}
}

func TestTruncateTo(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := openLog(t, t.TempDir(), cfg)
	for i := range 30 {
		mustAppend(t, l, makeBatch(t, 3, 40, int64(i), "tr"), 0)
	}
	segsBefore := l.NumSegments()
	// 31 is inside batch [30,32]: the whole batch goes.
	if err := l.TruncateTo(31); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 30 {
		t.Fatalf("LEO %d after truncate to 31, want 30", l.LogEndOffset())
	}
	if l.NumSegments() >= segsBefore {
		t.Fatalf("segments %d, before %d", l.NumSegments(), segsBefore)
	}
	if got := readAll(t, l, 0); len(got) != 10 || got[9].last != 29 {
		t.Fatalf("after truncate: %d batches", len(got))
	}
	info, _ := mustAppend(t, l, makeBatch(t, 1, 10, 1, "after"), 0)
	if info.FirstOffset != 30 {
		t.Fatalf("append after truncate at %d", info.FirstOffset)
	}
	if err := l.TruncateTo(0); err != nil || l.LogEndOffset() != 0 || l.NumSegments() != 1 {
		t.Fatalf("truncate to 0: %v LEO %d segs %d", err, l.LogEndOffset(), l.NumSegments())
	}
	mustAppend(t, l, makeBatch(t, 1, 10, 1, "again"), 0)
	if got := readAll(t, l, 0); len(got) != 1 {
		t.Fatalf("after truncate to 0: %d batches", len(got))
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := openLog(t, t.TempDir(), cfg)
	for i := range 30 {
		mustAppend(t, l, makeBatch(t, 3, 40, int64(i), "d"), 2)
	}
	n := l.NumSegments()
	start, err := l.DeleteRecordsBefore(50)
	if err != nil || start != 50 || l.LogStartOffset() != 50 {
		t.Fatalf("DeleteRecordsBefore: %d %v", start, err)
	}
	if l.NumSegments() >= n || l.segments()[0].base > 50 {
		t.Fatalf("segments %d (was %d), first base %d", l.NumSegments(), n, l.segments()[0].base)
	}
	if _, err := l.Read(49, 100, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if r, err := l.Read(50, 1, -1); err != nil || r.FirstOffset != 48 {
		t.Fatalf("read at start: %+v %v", r, err)
	}
	if _, err := l.DeleteRecordsBefore(91); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past LEO: %v", err)
	}
	if e := l.LeaderEpochs().Entries(); len(e) != 1 || e[0].StartOffset != 50 {
		t.Fatalf("epochs %+v", e)
	}
	// The start survives a restart through the checkpointed value.
	dir := l.Dir()
	l.Close()
	l2, err := OpenLog(dir, cfg, 0, 50, true, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 50 || l2.LogEndOffset() != 90 {
		t.Fatalf("reopened: start %d end %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

func TestRetention(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	now := time.Now()
	old := now.Add(-48 * time.Hour).UnixMilli()
	for i := range 20 {
		mustAppend(t, l, makeBatch(t, 3, 40, old, "old"), 0)
		_ = i
	}
	oldSegs := l.NumSegments()
	mustAppend(t, l, makeBatch(t, 3, 250, now.UnixMilli(), "new"), 0) // rolls
	for range 10 {
		mustAppend(t, l, makeBatch(t, 3, 40, now.UnixMilli(), "new"), 0)
	}
	cfg.RetentionMs = int64(24 * time.Hour / time.Millisecond)
	l.SetConfig(cfg)
	n, err := l.EnforceRetention(now)
	if err != nil || n != oldSegs {
		t.Fatalf("time retention deleted %d (%v), want %d", n, err, oldSegs)
	}
	if l.LogStartOffset() != 60 {
		t.Fatalf("log start %d, want 60", l.LogStartOffset())
	}
	// Deleted files are gone (delay 0) and no *.deleted remains eventually.
	waitFor(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "*.deleted"))
		return len(m) == 0
	})
	// Size retention: keep at most ~1 segment besides the active one.
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 1500
	l.SetConfig(cfg)
	if _, err := l.EnforceRetention(now); err != nil {
		t.Fatal(err)
	}
	if l.Size() > 1500+cfg.SegmentBytes {
		t.Fatalf("size %d after size retention", l.Size())
	}
	if got := readAll(t, l, l.LogStartOffset()); got[len(got)-1].last != l.LogEndOffset()-1 {
		t.Fatal("log not readable after retention")
	}
	// Never the active segment.
	cfg.RetentionBytes = 0
	l.SetConfig(cfg)
	l.EnforceRetention(now)
	if l.NumSegments() != 1 || l.LogEndOffset() != 93 {
		t.Fatalf("segments %d LEO %d", l.NumSegments(), l.LogEndOffset())
	}
}

// TestReaderSurvivesRetention: a read result taken before its segment is
// deleted stays readable until file.delete.delay.ms passes.
func TestReaderSurvivesRetention(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.FileDeleteDelayMs = 60000
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	var first []byte
	for i := range 20 {
		_, s := mustAppend(t, l, makeBatch(t, 3, 40, 1, "rs"), 0)
		if i == 0 {
			first = s
		}
	}
	r, err := l.Read(0, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RetentionBytes = 0
	l.SetConfig(cfg)
	if n, err := l.EnforceRetention(time.Now()); err != nil || n == 0 {
		t.Fatalf("retention: %d %v", n, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.log.deleted")); len(m) == 0 {
		t.Fatal("no *.log.deleted files")
	}
	b, err := r.Bytes()
	if err != nil || !bytes.Equal(b, first) {
		t.Fatalf("in-flight read after deletion: %v", err)
	}
	l.Close()
	if m, _ := filepath.Glob(filepath.Join(dir, "*.deleted")); len(m) != 0 {
		t.Fatalf("Close left %v", m)
	}
}

func TestCloseReopenClean(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 256
	dir := t.TempDir()
	l := openLog(t, dir, cfg)
	for i := range 50 {
		mustAppend(t, l, makeBatch(t, 2, 60, int64(i), "c"), 0)
	}
	want := readAll(t, l, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(makeBatch(t, 1, 1, 1, "x"), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	l2 := openLog(t, dir, cfg)
	if l2.LogEndOffset() != 100 || l2.RecoveryPoint() != 100 {
		t.Fatalf("reopen: LEO %d RP %d", l2.LogEndOffset(), l2.RecoveryPoint())
	}
	got := readAll(t, l2, 0)
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].data, want[i].data) {
			t.Fatalf("batch %d differs", i)
		}
	}
	info, _ := mustAppend(t, l2, makeBatch(t, 1, 1, 1, "y"), 0)
	if info.FirstOffset != 100 {
		t.Fatalf("append after reopen at %d", info.FirstOffset)
	}
}

func TestFlushPolicyAndRecoveryPoint(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 5
	l := openLog(t, t.TempDir(), cfg)
	for range 4 {
		mustAppend(t, l, makeBatch(t, 1, 1, 1, "f"), 0)
	}
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed early: RP %d", l.RecoveryPoint())
	}
	mustAppend(t, l, makeBatch(t, 1, 1, 1, "f"), 0)
	if l.RecoveryPoint() != 5 {
		t.Fatalf("RP %d after 5 messages", l.RecoveryPoint())
	}
	cfg.FlushIntervalMessages = 0
	cfg.FlushIntervalMs = 10
	l.SetConfig(cfg)
	mustAppend(t, l, makeBatch(t, 1, 1, 1, "f"), 0)
	if err := l.flushIfDue(time.Now()); err != nil || l.RecoveryPoint() != 5 {
		t.Fatalf("time flush too early: RP %d %v", l.RecoveryPoint(), err)
	}
	if err := l.flushIfDue(time.Now().Add(time.Second)); err != nil || l.RecoveryPoint() != 6 {
		t.Fatalf("time flush: RP %d %v", l.RecoveryPoint(), err)
	}
}

func TestDelete(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "topic-0")
	l, err := OpenLog(dir, testConfig(), 0, 0, true, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(t, 1, 1, 1, "d"), 0)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// waitFor polls cond with a generous deadline.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before deadline")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAppendChecked: batches the server validated as they arrived are not
// validated again, but only the set the Checked covers, and the rules of
// the log's config still apply to them.
func TestAppendChecked(t *testing.T) {
	checked := func(batches ...[]byte) recordbatch.Checked {
		var c recordbatch.Checked
		for _, b := range batches {
			c.CheckAhead(b)
		}
		return c
	}
	cfg := testConfig()
	cfg.MaxMessageBytes = 2000
	l := openLog(t, t.TempDir(), cfg)
	good := makeBatch(t, 2, 10, 1, "g")
	ck := checked(good)

	// The skip is real: a byte changed after the check (which the
	// server's own buffer never sees) is not noticed.
	changed := bytes.Clone(good)
	changed[len(changed)-1] ^= 0xff
	if _, err := l.AppendChecked(changed, ck, 0); err != nil {
		t.Fatalf("covered set validated again: %v", err)
	}
	// The Checked of another set covers nothing: full validation.
	corrupt := bytes.Clone(makeBatch(t, 2, 10, 1, "h"))
	corrupt[len(corrupt)-1] ^= 0xff
	if _, err := l.AppendChecked(corrupt, ck, 0); !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("another set's Checked let a corrupt batch through: %v", err)
	}
	if _, err := l.AppendChecked(append(bytes.Clone(good), corrupt...), ck, 0); !errors.Is(err, recordbatch.ErrCorrupt) {
		t.Fatalf("a Checked of the first batch let the second through: %v", err)
	}
	// The log's own rules still hold for a covered set.
	big := makeBatch(t, 1, 3000, 1, "big")
	if _, err := l.AppendChecked(big, checked(big), 0); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("covered batch above max.message.bytes: %v", err)
	}
	cfg.Compact = true
	l.SetConfig(cfg)
	keyless, err := recordbatch.Build(recordbatch.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]recordbatch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendChecked(keyless, checked(keyless), 0); err == nil {
		t.Fatal("covered keyless batch appended to a compacted log")
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("log end %d, want 2 (only the first append)", l.LogEndOffset())
	}
}
