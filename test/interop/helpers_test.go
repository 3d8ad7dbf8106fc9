package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// Generous bounds: the machine is slow and shared, and every broker runs
// with the race detector.
const (
	opTimeout     = 60 * time.Second
	clientTimeout = 120 * time.Second
)

// codecs are Kafka's compression codecs by the names every client uses.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecIDs are the batch attribute values (bits 0-2) of each codec.
var codecIDs = map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// rec is a record as every client sees it: what a test wants produced
// and what a consumer reports. Strings carry bytes (latin-1 in Python).
type rec struct {
	Topic     string      `json:"topic"`
	Partition int32       `json:"partition"`
	Offset    int64       `json:"offset"`
	Key       *string     `json:"key"`
	Value     string      `json:"value"`
	Headers   [][2]string `json:"headers"`
	Timestamp int64       `json:"ts,omitempty"`
}

func (r rec) keyString() string {
	if r.Key == nil {
		return "<null>"
	}
	return *r.Key
}

func strp(s string) *string { return &s }

// ack is where a producer was told its record went.
type ack struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error,omitempty"`
}

// makeRecords builds n records worth compressing, with some null keys,
// tagged with the producing client and codec so cross-client consumers
// can tell them apart. withIndexHeader is false for kcat, which can only
// add the same headers to every message.
func makeRecords(client, codec string, n int, withIndexHeader bool) []rec {
	recs := make([]rec, n)
	for i := range recs {
		r := rec{
			Value:   fmt.Sprintf("%s/%s/value-%04d/%s", client, codec, i, strings.Repeat("compressible-", 12)),
			Headers: [][2]string{{"src", client}},
		}
		if i%7 != 3 {
			r.Key = strp(fmt.Sprintf("key-%04d", i))
		}
		if withIndexHeader {
			r.Headers = append(r.Headers, [2]string{"i", fmt.Sprint(i)})
		}
		recs[i] = r
	}
	return recs
}

// checkSingle checks that got is exactly want on partition 0 of topic,
// in order, at offsets 0..n-1.
func checkSingle(t *testing.T, who, topic string, got, want []rec) {
	t.Helper()
	var mine []rec
	for _, r := range got {
		if r.Topic == topic {
			mine = append(mine, r)
		}
	}
	slices.SortStableFunc(mine, func(a, b rec) int { return int(a.Offset - b.Offset) })
	if len(mine) != len(want) {
		t.Errorf("%s read %d records from %s, want %d", who, len(mine), topic, len(want))
		return
	}
	for i, g := range mine {
		w := want[i]
		switch {
		case g.Partition != 0 || g.Offset != int64(i):
			t.Errorf("%s %s record %d at %d/%d, want 0/%d", who, topic, i, g.Partition, g.Offset, i)
		case g.keyString() != w.keyString():
			t.Errorf("%s %s offset %d: key %q, want %q", who, topic, i, g.keyString(), w.keyString())
		case g.Value != w.Value:
			t.Errorf("%s %s offset %d: value %q, want %q", who, topic, i, g.Value, w.Value)
		case !slices.Equal(g.Headers, w.Headers):
			t.Errorf("%s %s offset %d: headers %q, want %q", who, topic, i, g.Headers, w.Headers)
		default:
			continue
		}
		return // one mismatch per topic is enough to read
	}
}

// checkAcks checks that a producer was told record i went to offset i
// of partition 0.
func checkAcks(t *testing.T, who string, acks []ack, n int) {
	t.Helper()
	if len(acks) != n {
		t.Fatalf("%s: %d acks, want %d", who, len(acks), n)
	}
	for i, a := range acks {
		if a.Error != "" || a.Partition != 0 || a.Offset != int64(i) {
			t.Fatalf("%s: ack %d = %+v, want partition 0 offset %d", who, i, a, i)
		}
	}
}

// run runs a client process with a deadline (the process is killed by
// exec.CommandContext when it passes) and returns its stdout.
func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout:\n%s", name, strings.Join(args, " "), err, tail(stderr.String()), tail(stdout.String()))
	}
	return stdout.Bytes()
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// jsonLines decodes one JSON value per non-empty line into a []T.
func jsonLines[T any](t *testing.T, out []byte) []T {
	t.Helper()
	var vs []T
	for _, line := range bytes.Split(out, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

// newAdmin returns a kadm client whose metadata answers are at most a few
// milliseconds old: kadm serves Metadata from franz-go's cache, which by
// default may be 5 s stale, and tests poll for metadata changes.
func newAdmin(t *testing.T, b *harness.Broker) *kadm.Client {
	return kadm.NewClient(b.Client(kgo.MetadataMinAge(10 * time.Millisecond)))
}

// createTopic creates a topic with replication factor 1 and waits until
// every partition has a leader.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := harness.Ctx(t, opTimeout)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v (%s)", topic, err, resp.ErrMessage)
	}
	waitLeaders(t, adm, topic, int(partitions))
}

// waitLeaders polls metadata until topic has n partitions, each with a
// leader.
func waitLeaders(t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	harness.WaitFor(t, opTimeout, "leaders of "+topic, func() bool {
		md, err := adm.Metadata(harness.Ctx(t, opTimeout), topic)
		if err != nil {
			return false
		}
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) != n {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		return true
	})
}

// produceSync produces records with a franz-go client and fails the test
// on any error.
func produceSync(t *testing.T, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(harness.Ctx(t, opTimeout), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}
