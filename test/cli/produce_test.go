package cli_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/weir-project/weir/test/harness"
)

// codecIDs are the batch attribute values (bits 0-2) of each codec.
var codecIDs = map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// TestProduce produces with `weir produce` and checks every record with an
// independent franz-go consumer (and once with kcat).
func TestProduce(t *testing.T) {
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	bs := bootstrap(b)

	t.Run("keys headers and Java partitioning", func(t *testing.T) {
		createTopic(t, adm, "keyed", 3)
		// Twelve keys, five records each; the value holds the separator too
		// (only the first one splits) and some lines end in \r\n.
		var in strings.Builder
		for i := range 60 {
			eol := "\n"
			if i%4 == 1 {
				eol = "\r\n"
			}
			fmt.Fprintf(&in, "key-%d:value-%d:x%s", i%12, i, eol)
		}
		in.WriteString("empty:\n")
		r := ok(t, in.String(), "produce", "keyed", "--key-separator", ":", "--header", "source=cli",
			"--header", "trace=a=b", "--header", "source=again", "--verbose", bs)

		recs := consumeAll(t, b, "keyed", 61)
		var acked []string
		lastLine := map[int32]int{}
		for _, rec := range recs {
			key, val := string(rec.Key), string(rec.Value)
			if want := javaPartition(key, 3); rec.Partition != want {
				t.Errorf("key %q on partition %d, Java's partitioner says %d", key, rec.Partition, want)
			}
			if got := fmtHeaders(rec.Headers); got != "source=cli,trace=a=b,source=again" {
				t.Errorf("record %q headers = %s", val, got)
			}
			var line int
			if key == "empty" {
				if val != "" {
					t.Errorf("line \"empty:\" gave value %q", val)
				}
				line = 60
			} else if _, err := fmt.Sscanf(val, "value-%d:x", &line); err != nil || key != fmt.Sprintf("key-%d", line%12) {
				t.Errorf("record key %q value %q does not match an input line", key, val)
			}
			if prev, seen := lastLine[rec.Partition]; seen && line < prev {
				t.Errorf("partition %d: line %d stored after line %d", rec.Partition, line, prev)
			}
			lastLine[rec.Partition] = line
			acked = append(acked, fmt.Sprintf("%d@%d", rec.Partition, rec.Offset))
		}
		// --verbose reported exactly where the records are.
		got := lines(r.stdout)
		slices.Sort(got)
		slices.Sort(acked)
		if !slices.Equal(got, acked) {
			t.Errorf("--verbose printed %q, records are at %q", got, acked)
		}

		// kcat, an independent client, reads the same records.
		if _, err := exec.LookPath("kcat"); err != nil {
			t.Skip("kcat not installed (scripts/install-test-deps.sh installs it)")
		}
		out := run(t, "", "kcat", "-C", "-b", b.Addr, "-t", "keyed", "-o", "beginning", "-e", "-J", "-q")
		if out.code != 0 {
			t.Fatalf("kcat: exit %d: %s", out.code, out.stderr)
		}
		var viaKcat []string
		for _, l := range lines(out.stdout) {
			var m struct {
				Partition int32    `json:"partition"`
				Offset    int64    `json:"offset"`
				Key       string   `json:"key"`
				Payload   string   `json:"payload"`
				Headers   []string `json:"headers"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("kcat line %q: %v", l, err)
			}
			if m.Partition != javaPartition(m.Key, 3) || strings.Join(m.Headers, ",") != "source,cli,trace,a=b,source,again" {
				t.Errorf("kcat sees %+v", m)
			}
			viaKcat = append(viaKcat, fmt.Sprintf("%d@%d", m.Partition, m.Offset))
		}
		slices.Sort(viaKcat)
		if !slices.Equal(viaKcat, acked) {
			t.Errorf("kcat sees records at %q, franz-go at %q", viaKcat, acked)
		}
	})

	t.Run("acks", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			flags []string
			idem  bool
		}{
			{"0", []string{"--acks=0", "--idempotent=false"}, false},
			{"1", []string{"--acks=1", "--idempotent=false"}, false},
			{"-1", []string{"--acks=-1", "--idempotent=false"}, false},
			{"all", []string{"--acks=all", "--idempotent=false"}, false},
			{"all-idempotent", []string{"--acks=all", "--idempotent"}, true},
		} {
			topic := "acks" + c.name
			createTopic(t, adm, topic, 1)
			var in strings.Builder
			for i := range 20 {
				fmt.Fprintf(&in, "%s-%d\n", c.name, i)
			}
			ok(t, in.String(), append([]string{"produce", topic, bs}, c.flags...)...)
			// acks=0 tells nobody when the append happened: wait for it.
			harness.WaitFor(t, opTimeout, topic+" to hold 20 records", func() bool {
				return sum(endOffsets(t, adm, topic)) == 20
			})
			for i, rec := range consumeAll(t, b, topic, 20) {
				if want := fmt.Sprintf("%s-%d", c.name, i); string(rec.Value) != want || rec.Offset != int64(i) {
					t.Errorf("%s: offset %d holds %q, want %q at %d", topic, rec.Offset, rec.Value, want, i)
				}
				if idem := rec.ProducerID >= 0; idem != c.idem {
					t.Errorf("%s: record producer id %d, idempotent %v", topic, rec.ProducerID, c.idem)
				}
			}
		}
	})

	t.Run("compression", func(t *testing.T) {
		for codec, id := range codecIDs {
			topic := "codec-" + codec
			var in strings.Builder
			for i := range 100 {
				fmt.Fprintf(&in, "%s %04d %s\n", codec, i, strings.Repeat("squeeze me ", 20))
			}
			// The topic is auto-created, as Java's producer would have it.
			ok(t, in.String(), "produce", topic, "--compression", codec, "--linger=20ms", bs)
			for i, rec := range consumeAll(t, b, topic, 100) {
				if want := fmt.Sprintf("%s %04d ", codec, i); !strings.HasPrefix(string(rec.Value), want) {
					t.Fatalf("%s: record %d = %.20q, want prefix %q", topic, i, rec.Value, want)
				}
				if got := rec.Attrs.CompressionType(); got != id {
					t.Errorf("%s: record %d came in a batch with codec %d, want %d", topic, i, got, id)
				}
			}
		}
	})

	t.Run("partition and round-robin", func(t *testing.T) {
		createTopic(t, adm, "pinned", 3)
		createTopic(t, adm, "spread", 3)
		var keyed, keyless strings.Builder
		for i := range 30 {
			fmt.Fprintf(&keyed, "k%d:v%d\n", i, i)
			fmt.Fprintf(&keyless, "v%d\n", i)
		}
		ok(t, keyed.String(), "produce", "pinned", "--partition=2", "--key-separator=:", bs)
		if got := endOffsets(t, adm, "pinned"); got[0] != 0 || got[1] != 0 || got[2] != 30 {
			t.Errorf("--partition 2: end offsets %v, want all 30 in partition 2", got)
		}
		ok(t, keyless.String(), "produce", "spread", "--partitioner=round-robin", bs)
		if got := endOffsets(t, adm, "spread"); got[0] != 10 || got[1] != 10 || got[2] != 10 {
			t.Errorf("round-robin: end offsets %v, want 10 in each of 3 partitions", got)
		}
		// Record by record: each partition holds every third line, in order.
		prev := map[int32]int{}
		for _, rec := range consumeAll(t, b, "spread", 30) {
			var i int
			if _, err := fmt.Sscanf(string(rec.Value), "v%d", &i); err != nil || rec.Key != nil {
				t.Fatalf("round-robin record key %q value %q", rec.Key, rec.Value)
			}
			if p, seen := prev[rec.Partition]; seen && i != p+3 {
				t.Errorf("round-robin: partition %d has line %d after line %d", rec.Partition, i, p)
			}
			prev[rec.Partition] = i
		}
	})

	t.Run("bad input", func(t *testing.T) {
		r := weir(t, "k:v\nno separator\n", "produce", "keyed", "--key-separator=:", bs)
		if r.code == 0 || !strings.Contains(r.stderr, "line 2") {
			t.Errorf("line without separator: exit %d, stderr %q", r.code, r.stderr)
		}
		// A failed record is reported once, with its line, in the summary.
		r = weir(t, "x\n", "produce", "bad name", bs)
		want := []string{
			`weir: produce to "bad name": 1 of 1 records failed (line 1): INVALID_TOPIC_EXCEPTION: ` +
				"The request attempted to perform an operation on an invalid topic.",
		}
		if r.code == 0 || !slices.Equal(lines(r.stderr), want) {
			t.Errorf("produce to an invalid topic: exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
}
