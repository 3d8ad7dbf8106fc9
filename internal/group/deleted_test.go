package group

import (
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// idTopics is a metadata whose topics can be deleted and re-created,
// each creation with a new id.
type idTopics struct {
	mu     sync.Mutex
	next   byte
	topics map[string]idTopic
}

type idTopic struct {
	id         TopicID
	partitions int32
}

func newIDTopics() *idTopics {
	m := &idTopics{topics: map[string]idTopic{}}
	m.create("t1", 4)
	m.create("t2", 2)
	return m
}

func (m *idTopics) create(name string, partitions int32) TopicID {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	id := TopicID{0xAA, m.next}
	m.topics[name] = idTopic{id, partitions}
	return id
}

func (m *idTopics) delete(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.topics, name)
}

func (m *idTopics) TopicByName(name string) (TopicID, int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.topics[name]
	return t.id, t.partitions, ok
}

func (m *idTopics) TopicByID(id TopicID) (string, int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for n, t := range m.topics {
		if t.id == id {
			return n, t.partitions, true
		}
	}
	return "", 0, false
}

func (m *idTopics) TopicNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.topics {
		out = append(out, n)
	}
	return out
}

func (m *idTopics) PartitionExists(topic string, p int32) bool {
	_, n, ok := m.TopicByName(topic)
	return ok && p >= 0 && p < n
}

// newIDEnv is a coordinator owning the one partition of
// __consumer_offsets, over meta and log (a restart when log is reused).
func newIDEnv(t *testing.T, meta *idTopics, log *memLog, clock *fakeClock) *env {
	t.Helper()
	cfg := testConfig(clock, log)
	cfg.Topics, cfg.TopicMeta = meta, meta
	e := &env{t: t, c: New(cfg), clock: clock, log: log}
	t.Cleanup(e.c.Close)
	e.elect(0, 1)
	return e
}

func commitSimple(t *testing.T, e *env, group string, offs ...CommitOffset) {
	t.Helper()
	for i, err := range commit(e, CommitRequest{Group: group, Generation: -1, Offsets: offs}) {
		if err != nil {
			t.Fatalf("commit %+v: %v", offs[i], err)
		}
	}
}

// tombstones lists the offset tombstones of partition 0's log, by group
// and partition.
func tombstones(t *testing.T, l *memLog) map[string]map[tp]int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]map[tp]int{}
	for _, r := range l.parts[0] {
		d, err := decodeRecord(r.Key, r.Value)
		if err != nil || !d.isOffset || d.offset != nil {
			continue
		}
		if out[d.group] == nil {
			out[d.group] = map[tp]int{}
		}
		out[d.group][d.tp]++
	}
	return out
}

func fetchAll(t *testing.T, e *env, group string) map[tp]int64 {
	t.Helper()
	out, err := e.c.FetchOffsets(group, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[tp]int64{}
	for _, o := range out {
		m[tp{o.Topic, o.Partition}] = o.Offset
	}
	return m
}

// A deletion removes every group's offsets of the topic with tombstones,
// and leaves the other topics' alone; a restart replays the tombstones.
func TestTopicsDeletedRemovesOffsets(t *testing.T) {
	meta, log, clock := newIDTopics(), newMemLog(), newFakeClock()
	e := newIDEnv(t, meta, log, clock)
	commitSimple(t, e, "a", CommitOffset{Topic: "t1", Partition: 0, Offset: 5}, CommitOffset{Topic: "t1", Partition: 3, Offset: 6},
		CommitOffset{Topic: "t2", Partition: 0, Offset: 7})
	commitSimple(t, e, "b", CommitOffset{Topic: "t1", Partition: 1, Offset: 8})

	meta.delete("t1")
	if n := e.c.TopicsDeleted([]string{"t1"}); n != 3 {
		t.Fatalf("removed %d offsets, want 3", n)
	}
	want := map[string]map[tp]int{"a": {{"t1", 0}: 1, {"t1", 3}: 1}, "b": {{"t1", 1}: 1}}
	if got := tombstones(t, log); !equalTombstones(got, want) {
		t.Fatalf("tombstones %v, want %v", got, want)
	}
	if got := fetchAll(t, e, "a"); len(got) != 1 || got[tp{"t2", 0}] != 7 {
		t.Fatalf("group a offsets %v, want only t2-0 at 7", got)
	}
	if f := fetchOne(t, e, "b", "t1", 1); f.Offset != -1 {
		t.Fatalf("deleted partition fetched %+v", f)
	}
	// Nothing left to remove: a second pass writes nothing.
	before := log.count(0)
	if n := e.c.TopicsDeleted([]string{"t1"}); n != 0 || log.count(0) != before {
		t.Fatalf("second pass removed %d, log %d -> %d", n, before, log.count(0))
	}

	// Re-created, the topic starts without offsets, after a restart too.
	meta.create("t1", 4)
	e.c.Close()
	e = newIDEnv(t, meta, log, clock)
	if f := fetchOne(t, e, "a", "t1", 0); f.Offset != -1 {
		t.Fatalf("re-created topic fetched %+v after a restart", f)
	}
	if got := fetchAll(t, e, "a"); len(got) != 1 || got[tp{"t2", 0}] != 7 {
		t.Fatalf("group a offsets after a restart %v", got)
	}
	if log.count(0) != before {
		t.Fatalf("the load wrote %d records, want none", log.count(0)-before)
	}
}

func equalTombstones(a, b map[string]map[tp]int) bool {
	if len(a) != len(b) {
		return false
	}
	for g, m := range a {
		if len(m) != len(b[g]) {
			return false
		}
		for t, n := range m {
			if b[g][t] != n {
				return false
			}
		}
	}
	return true
}

// A coordinator that loads a partition after a topic was deleted, or
// deleted and re-created, without it (another broker coordinated, or
// none) drops their offsets, with tombstones; OffsetFetch does not serve
// them even before.
func TestLoadDropsOffsetsOfDeletedTopics(t *testing.T) {
	meta, log, clock := newIDTopics(), newMemLog(), newFakeClock()
	e := newIDEnv(t, meta, log, clock)
	commitSimple(t, e, "a", CommitOffset{Topic: "t1", Partition: 2, Offset: 5}, CommitOffset{Topic: "t2", Partition: 1, Offset: 7})

	// Re-created while this coordinator serves, before it is told: the
	// old offset is not served.
	meta.create("t1", 4)
	if f := fetchOne(t, e, "a", "t1", 2); f.Offset != -1 {
		t.Fatalf("offset of the re-created topic served: %+v", f)
	}
	if got := fetchAll(t, e, "a"); len(got) != 1 {
		t.Fatalf("all offsets %v, want t2's only", got)
	}
	// And deleted while no coordinator runs.
	e.c.Close()
	meta.delete("t2")
	e = newIDEnv(t, meta, log, clock)
	want := map[string]map[tp]int{"a": {{"t1", 2}: 1, {"t2", 1}: 1}}
	waitFor(t, "tombstones written by the load", func() bool { return equalTombstones(tombstones(t, log), want) })
	if got := fetchAll(t, e, "a"); len(got) != 0 {
		t.Fatalf("offsets after the load %v", got)
	}
	// A commit to the new topic is kept, across a restart.
	commitSimple(t, e, "a", CommitOffset{Topic: "t1", Partition: 2, Offset: 1})
	e.c.Close()
	e = newIDEnv(t, meta, log, clock)
	if f := fetchOne(t, e, "a", "t1", 2); f.Offset != 1 {
		t.Fatalf("new topic's offset after a restart %+v", f)
	}
}

// A commit appended before the deletion reached the coordinator, and
// still replicating when the groups are swept, is removed once it lands.
func TestCommitInFlightWhenTopicDeleted(t *testing.T) {
	meta, log, clock := newIDTopics(), newMemLog(), newFakeClock()
	e := newIDEnv(t, meta, log, clock)
	log.hold()
	done := make(chan []error, 1)
	go func() {
		done <- commit(e, CommitRequest{Group: "a", Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 9}}})
	}()
	log.waitHeld(t, 1)
	meta.delete("t1")
	if n := e.c.TopicsDeleted([]string{"t1"}); n != 0 {
		t.Fatalf("swept %d offsets of a commit in flight", n)
	}
	log.release(0, nil)
	if errs := <-done; errs[0] != nil {
		t.Fatalf("commit: %v", errs[0])
	}
	// Its completion appended the tombstone.
	waitFor(t, "the tombstone of the landed commit", func() bool { return log.heldCount() == 2 })
	if f := fetchOne(t, e, "a", "t1", 0); f.Offset != -1 {
		t.Fatalf("landed commit of a deleted topic served: %+v", f)
	}
	log.release(1, nil)
	if got := tombstones(t, log); got["a"][tp{"t1", 0}] != 1 {
		t.Fatalf("tombstones %v", got)
	}
	waitFor(t, "the offset forgotten", func() bool {
		g, _ := e.c.lockOffsetsGroup("a", false)
		if g == nil {
			return true
		}
		defer g.mu.Unlock()
		return len(g.offsets) == 0
	})
	// The topic gone, new commits are refused.
	errs := commit(e, CommitRequest{Group: "a", Generation: -1, Offsets: []CommitOffset{{Topic: "t1", Partition: 0, Offset: 10}}})
	wantErr(t, errs[0], kerr.UnknownTopicOrPartition)
}

// Offsets recorded without a topic id (by an older version) are kept
// while their topic exists, since nothing tells which incarnation they
// belong to, and removed when a deletion of their topic is seen.
func TestOffsetWithoutTopicID(t *testing.T) {
	meta, log, clock := newIDTopics(), newMemLog(), newFakeClock()
	log.parts[0] = append(log.parts[0], offsetRecord("old", tp{"t1", 0}, Offset{Offset: 4, LeaderEpoch: -1, CommitTime: clock.Now()}))
	e := newIDEnv(t, meta, log, clock)
	if f := fetchOne(t, e, "old", "t1", 0); f.Offset != 4 {
		t.Fatalf("offset without an id %+v", f)
	}
	meta.delete("t1")
	meta.create("t1", 4)
	if n := e.c.TopicsDeleted([]string{"t1"}); n != 1 {
		t.Fatalf("removed %d, want 1", n)
	}
	if f := fetchOne(t, e, "old", "t1", 0); f.Offset != -1 {
		t.Fatalf("offset without an id after its topic was deleted %+v", f)
	}
}

// Commits record the topic's id (value version 4, as Kafka 4.1 writes
// them); a commit with a retention time keeps version 1, which has no
// place for it.
func TestCommitRecordsTopicID(t *testing.T) {
	meta, log, clock := newIDTopics(), newMemLog(), newFakeClock()
	e := newIDEnv(t, meta, log, clock)
	id, _, _ := meta.TopicByName("t2")
	commitSimple(t, e, "a", CommitOffset{Topic: "t2", Partition: 1, Offset: 3, LeaderEpoch: 2, Metadata: "m"})
	last := lastRecord(log)
	if v := int16(last.Value[0])<<8 | int16(last.Value[1]); v != 4 {
		t.Fatalf("value version %d, want 4", v)
	}
	d, err := decodeRecord(last.Key, last.Value)
	if err != nil || d.offset == nil || d.offset.TopicID != id || d.offset.Offset != 3 || d.offset.LeaderEpoch != 2 || d.offset.Metadata != "m" {
		t.Fatalf("decoded %+v %v", d.offset, err)
	}
	errs := commit(e, CommitRequest{Group: "a", Generation: -1, Retention: 3600e9, Offsets: []CommitOffset{{Topic: "t2", Partition: 0, Offset: 1}}})
	wantErr(t, errs[0], nil)
	last = lastRecord(log)
	if last.Value[1] != 1 {
		t.Fatalf("value version %d with a retention time, want 1", last.Value[1])
	}
}

func lastRecord(l *memLog) Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.parts[0][len(l.parts[0])-1]
}
