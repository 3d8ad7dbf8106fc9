package interop

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/weir-project/weir/test/harness"
)

func needKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (scripts/install-test-deps.sh installs it)")
	}
}

// produceKcat produces recs with kcat, one line each: "key<TAB>value", or
// just the value for a null key (kcat sends a null key when a line has no
// delimiter). kcat can only add the same headers to every message, so the
// headers of recs[0] are used for all.
func produceKcat(t *testing.T, b *harness.Broker, topic, codec string, recs []rec, extra ...string) {
	t.Helper()
	var in strings.Builder
	for _, r := range recs {
		if strings.ContainsAny(r.Value, "\t\n") || (r.Key != nil && strings.ContainsAny(*r.Key, "\t\n")) {
			t.Fatalf("record %q cannot travel as a kcat line", r.Value)
		}
		if r.Key != nil {
			in.WriteString(*r.Key + "\t")
		}
		in.WriteString(r.Value + "\n")
	}
	args := []string{"-P", "-b", b.Addr, "-t", topic, "-K", "\t", "-z", codec,
		"-X", "linger.ms=20", "-X", "enable.idempotence=false"}
	if len(recs) > 0 {
		for _, h := range recs[0].Headers {
			args = append(args, "-H", h[0]+"="+h[1])
		}
	}
	run(t, []byte(in.String()), "kcat", append(args, extra...)...)
}

// kcatMsg is kcat's -J envelope.
type kcatMsg struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"ts"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
	Headers   []string `json:"headers"` // key, value, key, value...
}

// consumeKcat reads a topic from the beginning to its end with kcat (no
// group: kcat assigns every partition itself).
func consumeKcat(t *testing.T, b *harness.Broker, topic string) []rec {
	t.Helper()
	out := run(t, nil, "kcat", "-C", "-b", b.Addr, "-t", topic, "-o", "beginning", "-e", "-J", "-q")
	var recs []rec
	for _, m := range jsonLines[kcatMsg](t, out) {
		r := rec{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Timestamp: m.Timestamp}
		if m.Payload != nil {
			r.Value = *m.Payload
		}
		for i := 0; i+1 < len(m.Headers); i += 2 {
			r.Headers = append(r.Headers, [2]string{m.Headers[i], m.Headers[i+1]})
		}
		recs = append(recs, r)
	}
	return recs
}

// kcatMetadata is the part of kcat -L -J we check.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
		} `json:"partitions"`
	} `json:"topics"`
}

// TestKcatMetadata checks kcat's view of the cluster: one broker at the
// address it dialled, and a topic with a leader per partition.
func TestKcatMetadata(t *testing.T) {
	needKcat(t)
	b := harness.StartBroker(t)
	createTopic(t, newAdmin(t, b), "kcat-md", 3, nil)
	var md kcatMetadata
	if err := json.Unmarshal(run(t, nil, "kcat", "-L", "-J", "-b", b.Addr, "-t", "kcat-md"), &md); err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || !strings.HasPrefix(md.Brokers[0].Name, b.Addr) {
		t.Errorf("brokers = %+v, want one at %s", md.Brokers, b.Addr)
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("topics = %+v, want kcat-md with 3 partitions", md.Topics)
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Leader != md.Brokers[0].ID {
			t.Errorf("partition %d leader %d, want %d", p.Partition, p.Leader, md.Brokers[0].ID)
		}
	}
}
