package replica

import (
	"log/slog"
	"testing"

	"github.com/weir-project/weir/internal/storage"
)

// TestEnsureDropsAnEarlierIncarnation: a replica still open for a topic
// that was since deleted and created again (another topic id) is not
// carried over to the new topic: Ensure with the new id drops it and its
// log, and opens an empty one recorded under the new id. Its records sit
// at offsets and leader epochs the new topic will use too, so nothing
// but the id tells them apart.
func TestEnsureDropsAnEarlierIncarnation(t *testing.T) {
	cfg := storage.DefaultConfig()
	logs, err := storage.OpenManager(storage.ManagerConfig{Dirs: []string{t.TempDir()}, Defaults: cfg}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m := NewManager(logs, 1)
	m.SetLogger(slog.New(slog.DiscardHandler))
	tp := storage.TopicPartition{Topic: "t"}
	st := func(id byte) State {
		return State{LeaderID: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1, TopicID: [16]byte{id}}
	}
	old, _, err := m.Ensure(tp, cfg, st(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.AppendAsLeader(batch(t, 5), 1); err != nil {
		t.Fatal(err)
	}
	if again, _, err := m.Ensure(tp, cfg, st(1)); err != nil || again != old {
		t.Fatalf("Ensure with the same id: %p, %v; want the open replica %p", again, err, old)
	}

	p, _, err := m.Ensure(tp, cfg, st(2))
	if err != nil {
		t.Fatal(err)
	}
	if p == old {
		t.Fatal("the old incarnation's replica was kept")
	}
	if leo := p.Log().LogEndOffset(); leo != 0 {
		t.Fatalf("the new incarnation's log ends at %d, want 0: it holds the old records", leo)
	}
	if id, ok := m.StoredTopicID(tp); !ok || id != ([16]byte{2}) {
		t.Fatalf("stored topic id %v (%v), want the new one", id, ok)
	}
	if _, err := old.AppendAsLeader(batch(t, 1), 1); err == nil {
		t.Fatal("the dropped replica still takes appends")
	}
	if _, err := p.AppendAsLeader(batch(t, 2), 1); err != nil {
		t.Fatal(err)
	}
	if o := p.Offsets(); o.LogEnd != 2 {
		t.Fatalf("offsets %+v after 2 records, want the log to end at 2", o)
	}
}
