package idempotence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/test/harness"
)

// TestStateSurvivesRestartWithDamagedSnapshots writes through several
// segment rolls (a snapshot each), stops the broker, damages or deletes
// every snapshot, restarts, and re-sends the producer's last batches: the
// state rebuilt from the log still recognises each one.
func TestStateSurvivesRestartWithDamagedSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name   string
		crash  bool // SIGKILL instead of a clean stop
		damage func(t *testing.T, path string)
	}{
		// No commas in names: the temp dir, named after the test, goes
		// into log.dirs, a comma-separated list.
		{"stop then corrupt snapshots", false, corrupt},
		{"stop then delete snapshots", false, remove},
		{"kill then corrupt snapshots", true, corrupt},
		{"kill then delete snapshots", true, remove},
		{"kill with snapshots intact", true, func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := harness.StartBroker(t)
			r := newRawClient(t, b)
			const topic = "snap"
			seg := "2048"
			r.createTopic(topic, map[string]*string{"segment.bytes": &seg})
			pid := r.newProducer()
			var batches [][]byte
			var offs []int64
			for i := range 12 { // ~400 bytes each: several rolls
				bt := batch(t, "s"+strings.Repeat("x", 100), pid, 0, int32(i*3), 3)
				batches = append(batches, bt)
				offs = append(offs, r.mustProduce(topic, bt))
			}
			if tc.crash {
				b.Kill()
			} else {
				b.Stop()
			}
			snaps, _ := filepath.Glob(filepath.Join(b.Dir, topic+"-0", "*.snapshot"))
			if len(snaps) < 2 {
				t.Fatalf("only %d snapshots after 12 batches with segment.bytes=%s", len(snaps), seg)
			}
			for _, s := range snaps {
				tc.damage(t, s)
			}
			b.Restart()
			r = newRawClient(t, b)
			r.ids[topic] = r.topicID(topic)
			for i := len(batches) - 5; i < len(batches); i++ {
				if got := r.mustProduce(topic, batches[i]); got != offs[i] {
					t.Fatalf("after restart, retry of batch %d answered %d, first answer %d", i, got, offs[i])
				}
			}
			r.wantErr(topic, batches[len(batches)-6], kerr.OutOfOrderSequenceNumber)
			r.mustProduce(topic, batch(t, "s"+strings.Repeat("x", 100), pid, 0, 36, 1))
			if got := len(values(t, b, topic)); got != 37 {
				t.Fatalf("%d records stored, want 37", got)
			}
		})
	}
}

func corrupt(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 6; i < len(data); i += 7 {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// topicID looks a topic's id up in the metadata.
func (r *rawClient) topicID(topic string) [16]byte {
	r.t.Helper()
	td, err := kadm.NewClient(r.cl).ListTopics(harness.Ctx(r.t, opTimeout), topic)
	if err != nil {
		r.t.Fatalf("list topics: %v", err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		r.t.Fatalf("topic %s in metadata: %+v", topic, d)
	}
	return d.ID
}
