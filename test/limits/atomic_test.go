package limits

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// block puts a regular file where the log dir of topic-partition belongs,
// so that opening that partition fails, and returns a function removing
// it.
func block(t *testing.T, b *harness.Broker, topic string, partition int) func() {
	t.Helper()
	path := filepath.Join(b.Dir, topic+"-"+itoa(partition))
	if err := os.WriteFile(path, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// logDirs lists the partition directories of topic in the log dir.
func logDirs(t *testing.T, b *harness.Broker, topic string) []string {
	t.Helper()
	entries, err := os.ReadDir(b.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCreateTopicIsAtomic: when some partitions of a new topic cannot be
// opened, CreateTopics answers KAFKA_STORAGE_ERROR and the topic does not
// exist, neither afterwards nor, for a client asking meanwhile, during the
// attempt; the logs of the partitions that did open are removed. Once the
// cause is gone the same creation succeeds.
func TestCreateTopicIsAtomic(t *testing.T) {
	b, _ := startBroker(t)
	c := b.Dial()
	unblock := block(t, b, "atomic", 3)

	// A second client watches the topic's metadata during the attempt.
	watcher := b.Dial()
	var seen atomic.Bool
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if resp, _ := metadata(watcher, "atomic"); resp.Topics[0].ErrorCode == 0 {
				seen.Store(true)
			}
		}
	}()
	st := createTopics(c, false, newTopic("atomic", 6)).Topics[0]
	close(stop)
	<-stopped
	expectCode(t, "create with a partition that cannot be opened", st.ErrorCode, kerr.KafkaStorageError)
	if !strings.Contains(deref(st.ErrorMessage), "atomic-3") {
		t.Fatalf("message %q does not name the partition", deref(st.ErrorMessage))
	}
	if seen.Load() {
		t.Fatal("a client saw the topic while it was being created")
	}
	expectCode(t, "metadata after the failed creation", topicCode(c, "atomic"), kerr.UnknownTopicOrPartition)
	harness.WaitFor(t, opTimeout, "logs of the failed topic removed", func() bool { return len(logDirs(t, b, "atomic")) == 0 })

	unblock()
	mustCreate(t, c, "atomic", 6)
	for p := int32(0); p < 6; p++ {
		expectCode(t, "produce to the new topic", produceOne(t, c, "atomic", p).ErrorCode, nil)
	}
}

// TestCreateTopicCrashLeavesNothing: a broker killed while it creates a
// topic does not have it after the restart, and can create it again. The
// topic is large and its last partition blocked, so the kill lands while
// its partitions are being opened (the test holds whatever the moment).
func TestCreateTopicCrashLeavesNothing(t *testing.T) {
	b, _ := startBroker(t)
	const n = 1500
	unblock := block(t, b, "crash", n-1)
	c := b.Dial()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = int32(opTimeout.Milliseconds())
		req.Topics = append(req.Topics, newTopic("crash", n))
		c.TryRequest(req) // the connection dies with the broker
	}()
	harness.WaitFor(t, opTimeout, "the topic's first log dirs", func() bool { return len(logDirs(t, b, "crash")) > 0 })
	b.Kill()
	<-answered
	off := len(b.Output())
	b.Restart()
	c = b.Dial()
	expectCode(t, "metadata after the crash", topicCode(c, "crash"), kerr.UnknownTopicOrPartition)
	unblock()
	// The new leader aborts the creation it finds pending; until then
	// the name is taken.
	harness.WaitFor(t, opTimeout, "the pending creation aborted", func() bool {
		return createTopics(c, true, newTopic("crash", 4)).Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code
	})
	mustCreate(t, c, "crash", 4)
	if out, _ := b.OutputSince(off); strings.Contains(out, "left pending") {
		t.Log("the restarted broker aborted the pending creation")
	}
	expectCode(t, "produce to the re-created topic", produceOne(t, c, "crash", 3).ErrorCode, nil)
}

func itoa(n int) string { return strconv.Itoa(n) }
