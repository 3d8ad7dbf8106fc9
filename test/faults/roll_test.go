package faults

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/storage/checkpoint"
	"github.com/weir-project/weir/test/harness"
)

// heldRE reads the offset below which a held roll flush was to make the
// log durable, from the broker's log line for it.
var heldRE = regexp.MustCompile(`roll flush held by WEIR_TEST_ROLL_FLUSH_GATE" log=(\S+) below_offset=(\d+)`)

// TestKillWhileRollFlushHeld kills the broker (SIGKILL) right after a
// segment roll whose fsyncs are certain not to have run: the broker's
// test gate (WEIR_TEST_ROLL_FLUSH_GATE, a FIFO nobody opens for writing)
// holds every background flush of rolled segments, and the test waits
// for the broker to log that it holds this one. Records produced while
// the flush is held are acknowledged at once (the roll no longer fsyncs
// under the log's lock), the checkpointed recovery point stays below
// the rolled segment, and after the restart, without the gate, recovery
// rescans that segment and every acknowledged record is there.
func TestKillWhileRollFlushHeld(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "roll-flush-gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	b := harness.StartBrokerEnv(t, []string{"WEIR_TEST_ROLL_FLUSH_GATE=" + fifo},
		"log.flush.offset.checkpoint.interval.ms=100")
	const topic = "rolled"
	segBytes := "65536"
	createTopic(t, b, topic, 1, map[string]*string{"segment.bytes": &segBytes})
	cl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	defer cl.Close()
	ctx := harness.Ctx(t, 2*opTimeout)
	acked := map[int64]string{}
	produce := func(i int) {
		v := fmt.Sprintf("rolled-%06d-%s", i, strings.Repeat("x", 1000))
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("produce record %d: %v", i, err)
		}
		acked[r.Offset] = v
	}
	// About 64 records of 1 KiB fill a segment; 1000 is far more than a
	// roll needs, and bounds the loop.
	var target int64 = -1
	i := 0
	for ; i < 1000 && target < 0; i++ {
		produce(i)
		for _, m := range heldRE.FindAllStringSubmatch(b.Output(), -1) {
			if strings.HasSuffix(m[1], topic+"-0") {
				target, _ = strconv.ParseInt(m[2], 10, 64)
			}
		}
	}
	if target < 0 {
		t.Fatalf("no roll flush held after %d records:\n%s", i, b.Output())
	}
	// The flush stays held: these are acknowledged without it.
	for n := i + 100; i < n; i++ {
		produce(i)
	}
	ckpt := filepath.Join(b.Dir, "recovery-point-offset-checkpoint")
	key := checkpoint.TopicPartition{Topic: topic, Partition: 0}
	var rp int64
	harness.WaitFor(t, opTimeout, "the recovery point of "+topic+"-0 to be checkpointed", func() bool {
		rps, err := checkpoint.ReadOffsets(ckpt)
		var ok bool
		rp, ok = rps[key]
		return err == nil && ok
	})
	if rp >= target {
		t.Fatalf("checkpointed recovery point %d while the flush below %d is held", rp, target)
	}
	b.Kill()
	b.Env = nil
	since := len(b.Output())
	b.Restart()
	if out := b.Output()[since:]; !strings.Contains(out, "recovering unflushed segments") {
		t.Fatalf("restart did not recover the unflushed segments:\n%s", out)
	}
	stored := readAll(t, b, topic)[0]
	for off, v := range acked {
		if stored[off] != v {
			t.Fatalf("%s-0 offset %d: %s, but %s was acknowledged there", topic, off, quote(stored[off]), quote(v))
		}
	}
	t.Logf("%d records acknowledged, %d of them after the roll at %d whose flush was held; recovery point %d at the kill", len(acked), len(acked)-int(target), target, rp)
	assertServes(t, b)
}
