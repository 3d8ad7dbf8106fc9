package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// fillValueSize is the size of each record value in the full-disk test:
// big enough to fill a small disk quickly, uncompressed on the wire.
const fillValueSize = 1024

// fillValue is record i of the full-disk test. The body is derived from i
// so that any stored record can be checked for corruption on its own.
func fillValue(i int) []byte { return sizedFillValue(i, fillValueSize) }

// sizedFillValue is fillValue with a given size.
func sizedFillValue(i, size int) []byte {
	v := fmt.Appendf(make([]byte, 0, size), "fill-%08d-", i)
	for len(v) < size {
		v = append(v, byte('a'+(i+len(v))%26))
	}
	return v
}

// checkFillValue reports whether v is exactly one of the values fillValue
// produces, and which.
func checkFillValue(v string) (int, bool) {
	var i int
	if _, err := fmt.Sscanf(v, "fill-%08d-", &i); err != nil {
		return 0, false
	}
	return i, v == string(sizedFillValue(i, len(v)))
}

// TestFullDisk fills the disk holding log.dirs (a small tmpfs; the Raft
// metadata lives elsewhere via metadata.log.dir) with an idempotent
// acks=all producer. Weir's rule (README, "How it is built"): a write
// that hits ENOSPC is cut back and answered KAFKA_STORAGE_ERROR; unlike
// Kafka the log dir is not taken offline, so the broker keeps serving
// reads and takes writes again as soon as space is freed. Every
// acknowledged record must be readable throughout: on the full disk,
// after a SIGTERM and a start on the full disk, after freeing space, and
// after kill -9 and recovery.
func TestFullDisk(t *testing.T) {
	disk := harness.MountTmpfs(t, 8).Dir
	metaDir := t.TempDir()
	b := harness.StartBroker(t, "log.dirs="+disk, "metadata.log.dir="+metaDir)
	if _, err := os.Stat(filepath.Join(metaDir, "__raft")); err != nil {
		t.Fatalf("metadata.log.dir is not used for the Raft log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(disk, "__raft")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the Raft log is in log.dirs despite metadata.log.dir: %v", err)
	}

	// Ballast takes a quarter of the disk; deleting it later frees space.
	const ballast, topic = "ballast", "fill"
	createTopic(t, b, ballast, 1, nil)
	bl := b.Client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	pad := bytes.Repeat([]byte("b"), 4096)
	var recs []*kgo.Record
	for range 512 {
		recs = append(recs, &kgo.Record{Topic: ballast, Value: pad})
	}
	if err := bl.ProduceSync(harness.Ctx(t, 2*opTimeout), recs...).FirstErr(); err != nil {
		t.Fatalf("produce ballast: %v", err)
	}
	segBytes := "262144"
	createTopic(t, b, topic, 1, map[string]*string{"segment.bytes": &segBytes})

	cl := b.Client(
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// A storage error is retriable: let a few retries happen, then
		// hand the failure to us instead of retrying forever.
		// franz-go waits for fresh metadata before retrying such an
		// error; keep those waits short.
		kgo.RecordRetries(2),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	)
	next := 0
	acked := map[int64]string{}
	// produceBatch sends n numbered records in one synchronous call and
	// records the acknowledged ones; it returns the first failure.
	produceBatch := func(ctx context.Context, n, size int) error {
		batch := make([]*kgo.Record, n)
		for i := range batch {
			batch[i] = &kgo.Record{Value: sizedFillValue(next, size)}
			next++
		}
		var first error
		for _, r := range cl.ProduceSync(ctx, batch...) {
			if r.Err != nil {
				if first == nil {
					first = r.Err
				}
				continue
			}
			acked[r.Record.Offset] = string(r.Record.Value)
		}
		return first
	}

	ctx := harness.Ctx(t, 3*opTimeout)
	// Fill with batches of 16 records, then top up record by record: the
	// disk holds at most 8192 records of 1 KiB, so both loops must end
	// with an error well before their bounds.
	var fullErr error
	for _, step := range []struct{ batch, bound int }{{16, 1000}, {1, 100}} {
		fullErr = nil
		for range step.bound {
			if fullErr = produceBatch(ctx, step.batch, fillValueSize); fullErr != nil {
				break
			}
		}
		if fullErr == nil {
			t.Fatalf("%d records acknowledged on an 8 MiB disk without a failure", len(acked))
		}
		if !errors.Is(fullErr, kerr.KafkaStorageError) {
			t.Fatalf("produce to a full disk failed with %v, want KAFKA_STORAGE_ERROR", fullErr)
		}
	}
	t.Logf("disk full after %d acknowledged records: %v", len(acked), fullErr)
	if err := produceBatch(ctx, 16, fillValueSize); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce while the disk is still full: %v, want KAFKA_STORAGE_ERROR", err)
	}
	// A record bigger than what is left of the active segment makes the
	// log roll first, which needs room for the sealed indexes: the roll
	// fails, and must leave the log as it was.
	if err := produceBatch(ctx, 1, 250<<10); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce needing a segment roll on the full disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, exited := b.ExitCode(); exited {
		t.Fatalf("broker exited when its disk filled:\n%s", b.Output())
	}

	// Reads keep working on the full disk, and show exactly what was acknowledged.
	assertFillLog(t, b, topic, acked)

	// A clean shutdown on the full disk, and a start on it: whatever
	// could not be written must not be claimed clean, and the restarted
	// broker serves every acknowledged record.
	b.Stop()
	code, _ := b.ExitCode()
	_, markerErr := os.Stat(filepath.Join(disk, ".kafka_cleanshutdown"))
	// One log dir: any error at shutdown concerns it, and an exit 0
	// means every flush and checkpoint reached the disk.
	if marker := markerErr == nil; marker != (code == 0) {
		t.Fatalf("SIGTERM on a full disk: exit code %d but clean-shutdown marker written %v:\n%s", code, marker, b.Output())
	}
	t.Logf("SIGTERM on a full disk: exit code %d, clean-shutdown marker written %v", code, markerErr == nil)
	b.Restart()
	assertFillLog(t, b, topic, acked)

	// Free space: deleting the ballast topic needs only the metadata
	// disk and a rename plus unlinks on the full one.
	adm := kadm.NewClient(b.Client())
	if resp, err := adm.DeleteTopic(ctx, ballast); err != nil || resp.Err != nil {
		t.Fatalf("delete %s on a full disk: %v %v", ballast, err, resp.Err)
	}
	harness.WaitFor(t, opTimeout, "the ballast's files to be removed", func() bool {
		ents, err := os.ReadDir(disk)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ballast+"-") {
				return false
			}
		}
		return true
	})
	// The same producer carries on by itself once there is room again.
	var err error
	harness.WaitFor(t, opTimeout, "produce to succeed after freeing space", func() bool {
		err = produceBatch(ctx, 16, fillValueSize)
		return err == nil
	})
	// A quarter of what the ballast freed.
	for range 8 {
		if err := produceBatch(ctx, 16, fillValueSize); err != nil {
			t.Fatalf("produce after freeing space: %v", err)
		}
	}
	assertFillLog(t, b, topic, acked)

	// The failed writes left nothing behind that recovery must cut: the
	// log ends where it ended before the crash, and holds every ack.
	before := endOffsets(t, b, topic)
	b.Kill()
	b.Restart()
	if after := endOffsets(t, b, topic); after[0] != before[0] {
		t.Fatalf("log end of %s-0 moved from %d to %d across kill -9 and recovery", topic, before[0], after[0])
	}
	assertFillLog(t, b, topic, acked)
	assertServes(t, b)
}

// assertFillLog reads the whole topic and checks that every acknowledged
// record is at its offset with its value, and that every stored record
// (acknowledged or not) is an intact record this test produced.
func assertFillLog(t *testing.T, b *harness.Broker, topic string, acked map[int64]string) {
	t.Helper()
	stored := readAll(t, b, topic)[0]
	for off, v := range acked {
		if got, ok := stored[off]; !ok || got != v {
			t.Fatalf("%s-0 offset %d: %s (present %v), but %s was acknowledged there", topic, off, quote(got), ok, quote(v))
		}
	}
	for off, v := range stored {
		if _, ok := checkFillValue(v); !ok {
			t.Fatalf("%s-0 offset %d holds %s, which this test never produced", topic, off, quote(v))
		}
	}
}
