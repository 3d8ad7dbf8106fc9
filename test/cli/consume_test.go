package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// jsonRec is one line of `weir consume --format json`.
type jsonRec struct {
	Topic         string  `json:"topic"`
	Partition     int32   `json:"partition"`
	Offset        int64   `json:"offset"`
	Timestamp     int64   `json:"timestamp"`
	Key           *string `json:"key"`
	KeyEncoding   string  `json:"key_encoding"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding"`
	Headers       []struct {
		Key           string  `json:"key"`
		Value         *string `json:"value"`
		ValueEncoding string  `json:"value_encoding"`
	} `json:"headers"`
}

// decode turns a JSON string field back into bytes (nil for null).
func decode(t *testing.T, s *string, encoding string) []byte {
	t.Helper()
	switch {
	case s == nil:
		return nil
	case encoding == "base64":
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			t.Fatalf("bad base64 %q: %v", *s, err)
		}
		return b
	case encoding != "":
		t.Fatalf("unknown encoding %q", encoding)
	}
	return []byte(*s)
}

// sameRecord says how got (JSON) differs from want (what was produced), or "".
func sameRecord(t *testing.T, got jsonRec, want *kgo.Record) string {
	var gh, wh []string
	for _, h := range got.Headers {
		gh = append(gh, fmt.Sprintf("%s=%q", h.Key, decode(t, h.Value, h.ValueEncoding)))
	}
	for _, h := range want.Headers {
		wh = append(wh, fmt.Sprintf("%s=%q", h.Key, h.Value))
	}
	key, val := decode(t, got.Key, got.KeyEncoding), decode(t, got.Value, got.ValueEncoding)
	switch {
	case got.Topic != want.Topic || got.Partition != want.Partition || got.Offset != want.Offset:
		return fmt.Sprintf("at %s[%d]@%d, want %s[%d]@%d", got.Topic, got.Partition, got.Offset,
			want.Topic, want.Partition, want.Offset)
	case got.Timestamp != want.Timestamp.UnixMilli():
		return fmt.Sprintf("timestamp %d, want %d", got.Timestamp, want.Timestamp.UnixMilli())
	case !bytes.Equal(key, want.Key) || (key == nil) != (want.Key == nil):
		return fmt.Sprintf("key %q, want %q", key, want.Key)
	case !bytes.Equal(val, want.Value):
		return fmt.Sprintf("value %q, want %q", val, want.Value)
	case !slices.Equal(gh, wh):
		return fmt.Sprintf("headers %q, want %q", gh, wh)
	}
	return ""
}

// TestConsume reads records produced by franz-go (explicit partitions and
// timestamps) with `weir consume` and checks what it prints.
func TestConsume(t *testing.T) {
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	const topic = "events"
	createTopic(t, adm, topic, 3)

	// Partition p, record i: timestamp base + i s + p*10 ms, so a time
	// picks the same records on every partition.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	prod := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	var want []*kgo.Record
	for p := range int32(3) {
		for i := range 4 {
			want = append(want, &kgo.Record{
				Topic: topic, Partition: p, Offset: int64(i),
				Key:       []byte(fmt.Sprintf("k%d%d", p, i)),
				Value:     []byte(fmt.Sprintf("v%d%d", p, i)),
				Timestamp: base.Add(time.Duration(i)*time.Second + time.Duration(p)*10*time.Millisecond),
				Headers:   []kgo.RecordHeader{{Key: "h", Value: []byte{'0' + byte(p)}}, {Key: "h", Value: []byte{'0' + byte(i)}}},
			})
		}
	}
	// Null key, bytes that are not UTF-8, an empty header value.
	want = append(want, &kgo.Record{
		Topic: topic, Partition: 0, Offset: 4, Value: []byte{0xff, 0, 0xfe},
		Timestamp: base.Add(5 * time.Second),
		Headers:   []kgo.RecordHeader{{Key: "bin", Value: []byte{0xc3}}, {Key: "empty", Value: []byte{}}},
	})
	for _, r := range want {
		cp := *r
		if err := prod.ProduceSync(harness.Ctx(t, opTimeout), &cp).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		if cp.Offset != r.Offset {
			t.Fatalf("record %q went to offset %d, want %d", r.Value, cp.Offset, r.Offset)
		}
	}

	// consumeJSON runs weir consume --format json with args and checks the
	// records it prints are exactly want[idx...], in per-partition order.
	// It stops after as many records as expected (a wrong one would show
	// in place of a right one), or after 2 s idle when none are expected.
	consumeJSON := func(t *testing.T, idx []int, args ...string) {
		t.Helper()
		stop := []string{"--timeout=2s"}
		if len(idx) > 0 {
			stop = []string{"--timeout=60s", fmt.Sprintf("--max-messages=%d", len(idx))}
		}
		r := ok(t, "", append(append([]string{"consume", topic, "--format=json", bs}, stop...), args...)...)
		got := lines(r.stdout)
		if len(got) != len(idx) {
			t.Fatalf("consume %q printed %d records, want %d:\n%s", args, len(got), len(idx), r.stdout)
		}
		if !strings.HasSuffix(r.stderr, fmt.Sprintf("Processed a total of %d messages\n", len(idx))) {
			t.Errorf("consume %q: stderr %q", args, r.stderr)
		}
		var recs []jsonRec
		for _, l := range got {
			var jr jsonRec
			if err := json.Unmarshal([]byte(l), &jr); err != nil {
				t.Fatalf("consume %q: line %q: %v", args, l, err)
			}
			recs = append(recs, jr)
		}
		slices.SortStableFunc(recs, func(a, b jsonRec) int { return int(a.Partition - b.Partition) })
		for n, jr := range recs {
			if diff := sameRecord(t, jr, want[idx[n]]); diff != "" {
				t.Errorf("consume %q: record %d: %s", args, n, diff)
			}
		}
	}
	all := []int{0, 1, 2, 3, 12, 4, 5, 6, 7, 8, 9, 10, 11} // by partition, then offset

	t.Run("from-beginning json", func(t *testing.T) {
		consumeJSON(t, all, "--from-beginning")
		// Without --max-messages it ends after --timeout idle, all printed.
		r := ok(t, "", "consume", topic, "--from-beginning", "--format=value", "--timeout=2s", bs)
		if got := lines(r.stdout); len(got) != len(all) || !strings.HasSuffix(r.stderr, "Processed a total of 13 messages\n") {
			t.Errorf("--from-beginning --timeout 2s printed %q, stderr %q", got, r.stderr)
		}
	})
	t.Run("offset with partition", func(t *testing.T) {
		consumeJSON(t, []int{6, 7}, "--partition=1", "--offset=2")
		consumeJSON(t, []int{3, 12, 11}, "--partition=0,2", "--offset=3")
		consumeJSON(t, []int{12}, "--partition=0", "--offset=4")
	})
	t.Run("partition filter", func(t *testing.T) {
		consumeJSON(t, []int{0, 1, 2, 3, 12, 8, 9, 10, 11}, "--partition=0", "--partition=2", "--from-beginning")
	})
	t.Run("from-time", func(t *testing.T) {
		ms := strconv.FormatInt(base.Add(2*time.Second).UnixMilli(), 10)
		consumeJSON(t, []int{2, 3, 12, 6, 7, 10, 11}, "--from-time="+ms)
		consumeJSON(t, []int{3, 12, 7, 11}, "--from-time="+base.Add(3*time.Second).UTC().Format(time.RFC3339))
		// Between records: partition 1's record 1 is at base+1.010s.
		consumeJSON(t, []int{5, 6, 7}, "--partition=1", "--from-time="+strconv.FormatInt(base.UnixMilli()+1005, 10))
		consumeJSON(t, nil, "--from-time="+strconv.FormatInt(base.Add(time.Minute).UnixMilli(), 10))
	})

	t.Run("max-messages", func(t *testing.T) {
		r := ok(t, "", "consume", topic, "--from-beginning", "--max-messages=5", "--timeout=60s", bs)
		if got := lines(r.stdout); len(got) != 5 || r.stderr != "Processed a total of 5 messages\n" {
			t.Errorf("--max-messages 5 printed %q, stderr %q", got, r.stderr)
		}
	})

	t.Run("value and kv", func(t *testing.T) {
		r := ok(t, "", "consume", topic, "--partition=1", "--offset=earliest", "--max-messages=4", "--timeout=60s", bs)
		if r.stdout != "v10\nv11\nv12\nv13\n" {
			t.Errorf("--format value printed %q", r.stdout)
		}
		r = ok(t, "", "consume", topic, "--partition=2", "--offset=1", "--format=kv", "--max-messages=3", "--timeout=60s", bs)
		if r.stdout != "k21\tv21\nk22\tv22\nk23\tv23\n" {
			t.Errorf("--format kv printed %q", r.stdout)
		}
		r = ok(t, "", "consume", topic, "--partition=0", "--offset=3", "--format=kv", "--key-separator= => ",
			"--max-messages=2", "--timeout=60s", bs)
		if r.stdout != "k03 => v03\nnull => \xff\x00\xfe\n" {
			t.Errorf("--format kv --key-separator printed %q", r.stdout)
		}
	})

	t.Run("timeout at the end", func(t *testing.T) {
		// Default start is the end: nothing new arrives, so it waits out
		// --timeout and stops cleanly.
		r := ok(t, "", "consume", topic, "--timeout=2s", bs)
		if r.stdout != "" || r.stderr != "Processed a total of 0 messages\n" {
			t.Errorf("consume at the end printed %q, stderr %q", r.stdout, r.stderr)
		}
		if r.elapsed < 2*time.Second {
			t.Errorf("consume --timeout 2s returned after %s", r.elapsed)
		}
	})

	t.Run("only new records by default", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, harness.Bin(), "consume", topic, "--max-messages=1", "--timeout=60s", bs)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The consumer may not have found the end yet: keep producing new
		// records until it has printed one.
		var err error
	loop:
		for i := 0; ; i++ {
			rec := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprintf("new-%d", i))}
			if perr := prod.ProduceSync(ctx, rec).FirstErr(); perr != nil {
				t.Fatalf("produce: %v", perr)
			}
			select {
			case err = <-done:
				break loop
			case <-time.After(300 * time.Millisecond):
			}
		}
		if err != nil || !strings.HasPrefix(out.String(), "new-") || len(lines(out.String())) != 1 {
			t.Errorf("consume from the end: %v, printed %q, stderr %q", err, out.String(), errb.String())
		}
	})
}

var (
	benchProduceRE = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ` +
		`([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ` +
		`([\d.]+) ms 99th, ([\d.]+) ms 99\.9th\.$`)
	benchProgressRE = regexp.MustCompile(`^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), ` +
		`[\d.]+ ms avg latency, [\d.]+ ms max latency\.$`)
	benchConsumeRE = regexp.MustCompile(`^(\d+) records consumed, ([\d.]+) MB, ([\d.]+) MB/sec, ` +
		`([\d.]+) records/sec, ([\d.]+) s elapsed\.$`)
)

// floats parses the submatches of re in the last line of out.
func floats(t *testing.T, re *regexp.Regexp, out string) (last string, fs []float64) {
	t.Helper()
	ls := lines(out)
	if len(ls) == 0 {
		t.Fatalf("no output")
	}
	last = ls[len(ls)-1]
	m := re.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("final line %q does not match %s", last, re)
	}
	for _, s := range m[1:] {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q in %q: %v", s, last, err)
		}
		fs = append(fs, f)
	}
	return last, fs
}

func TestBench(t *testing.T) {
	t.Parallel() // alongside TestUnreachableBroker, which mostly waits
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)
	createTopic(t, adm, "perf", 3)

	r := ok(t, "", "bench", "produce", "--topic=perf", "--num-records=20000", "--record-size=1024",
		"--acks=1", "--report-interval=200ms", bs)
	line, f := floats(t, benchProduceRE, r.stdout)
	t.Logf("acks=1: %s", line)
	count, rps, mbps, avg, maxl, p50, p95, p99, p999 := f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]
	if count != 20000 || rps <= 0 || mbps <= 0 {
		t.Errorf("summary %q: want 20000 records at a positive rate", line)
	}
	// MB is 2^20 bytes of 1 KiB records: MB/s = records/s / 1024, up to
	// rounding in the printed figures.
	if d := mbps - rps/1024; d > 0.01+rps*1e-6 || d < -0.01-rps*1e-6 {
		t.Errorf("summary %q: %.2f MB/sec does not match %.1f records/sec of 1 KiB", line, mbps, rps)
	}
	// Percentiles come from a histogram within 1% of the true value.
	if !(p50 <= p95 && p95 <= p99 && p99 <= p999 && p999 <= maxl*1.01+0.01 && avg <= maxl) {
		t.Errorf("summary %q: latencies out of order", line)
	}
	for _, l := range lines(r.stdout)[:len(lines(r.stdout))-1] {
		if !benchProgressRE.MatchString(l) {
			t.Errorf("progress line %q is not in Kafka's format", l)
		}
	}
	if got := sum(endOffsets(t, adm, "perf")); got != 20000 {
		t.Fatalf("after bench produce the topic holds %d records, want 20000", got)
	}

	// acks=-1, compressed, capped at 2500 records/s: the cap holds.
	r = ok(t, "", "bench", "produce", "--topic=perf", "--num-records=5000", "--record-size=1024",
		"--acks=-1", "--compression=zstd", "--throughput=2500", bs)
	line, f = floats(t, benchProduceRE, r.stdout)
	t.Logf("acks=-1 zstd capped: %s", line)
	if f[0] != 5000 || f[1] > 2500*1.05 {
		t.Errorf("summary %q: want 5000 records at no more than 2500 records/sec", line)
	}
	if got := sum(endOffsets(t, adm, "perf")); got != 25000 {
		t.Fatalf("after both bench produce runs the topic holds %d records, want 25000", got)
	}

	r = ok(t, "", "bench", "consume", "--topic=perf", "--num-records=25000", bs)
	line, f = floats(t, benchConsumeRE, r.stdout)
	t.Logf("consume: %s", line)
	if f[0] != 25000 || fmt.Sprintf("%.2f", f[1]) != fmt.Sprintf("%.2f", 25000*1024.0/(1<<20)) || f[2] <= 0 || f[3] <= 0 || f[4] <= 0 {
		t.Errorf("bench consume summary %q: want 25000 records of 1 KiB", line)
	}

	// Asking for more than there is runs into --timeout: an error, with
	// the summary of what was read.
	r = weir(t, "", "bench", "consume", "--topic=perf", "--num-records=30000", "--timeout=2s", bs)
	ls := lines(r.stderr)
	if r.code == 0 || len(ls) != 1 || !strings.Contains(ls[0], "25000 of 30000 records") || !strings.Contains(ls[0], "no record for 2s") {
		t.Errorf("bench consume past the end: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, f = floats(t, benchConsumeRE, r.stdout); f[0] != 25000 {
		t.Errorf("bench consume past the end reports %v records, want 25000", f[0])
	}
}
