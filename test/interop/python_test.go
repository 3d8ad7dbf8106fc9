package interop

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weir-project/weir/test/harness"
)

// python is the interpreter that sees the Debian client packages; the
// python3 first on PATH may not.
const python = "/usr/bin/python3"

// Client names as clients.py knows them.
const (
	kafkaPython = "kafka-python"
	confluent   = "confluent"
)

// needPython skips unless the interpreter can import the client's module
// (and, for kafka-python, the codec's module: kafka-python compresses in
// Python with optional packages).
func needPython(t *testing.T, client, codec string) {
	t.Helper()
	mods := map[string]string{kafkaPython: "kafka", confluent: "confluent_kafka"}
	check := "import " + mods[client]
	if client == kafkaPython {
		switch codec {
		case "snappy":
			check += "; import snappy"
		case "lz4":
			check += "; import lz4.frame"
		case "zstd":
			check += "; import zstandard"
		}
	}
	if err := exec.Command(python, "-c", check).Run(); err != nil {
		t.Skipf("%s cannot do %s here (%q failed; scripts/install-test-deps.sh installs the Debian packages)", client, codec, check)
	}
}

// pySpec is the JSON that testdata/clients.py reads on stdin.
type pySpec struct {
	Client      string    `json:"client"`
	Op          string    `json:"op"`
	Bootstrap   string    `json:"bootstrap"`
	Topic       string    `json:"topic,omitempty"`
	Partition   int32     `json:"partition"`
	Compression string    `json:"compression,omitempty"`
	Partitioner string    `json:"partitioner,omitempty"`
	Records     []pyRec   `json:"records,omitempty"`
	Topics      []pyTopic `json:"topics,omitempty"`
	Times       []int64   `json:"times,omitempty"`
}

// pyRec is a record to produce; a nil Partition lets the client's
// partitioner choose.
type pyRec struct {
	Key       *string     `json:"key"`
	Value     string      `json:"value"`
	Headers   [][2]string `json:"headers"`
	Partition *int32      `json:"partition"`
	Timestamp int64       `json:"ts,omitempty"`
}

type pyTopic struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Count      int    `json:"count"`
}

func runPy(t *testing.T, spec pySpec) []byte {
	t.Helper()
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, in, python, "testdata/clients.py")
}

// producePy produces recs with a Python client. manual pins every record
// to its Partition; otherwise the client's partitioner decides.
func producePy(t *testing.T, b *harness.Broker, client, topic, codec, partitioner string, recs []rec, manual bool) []ack {
	t.Helper()
	spec := pySpec{Client: client, Op: "produce", Bootstrap: b.Addr, Topic: topic, Compression: codec, Partitioner: partitioner}
	for _, r := range recs {
		pr := pyRec{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		if manual {
			pr.Partition = &r.Partition
		}
		spec.Records = append(spec.Records, pr)
	}
	return jsonLines[ack](t, runPy(t, spec))
}

// consumePy reads every partition of each topic from the beginning until
// it has the wanted count (or its own deadline passes).
func consumePy(t *testing.T, b *harness.Broker, client string, topics []pyTopic) []rec {
	t.Helper()
	return jsonLines[rec](t, runPy(t, pySpec{Client: client, Op: "consume", Bootstrap: b.Addr, Topics: topics}))
}

// TestKafkaPythonAutoCreate checks the Metadata quirk kafka-python relies
// on: it sends Metadata v1 (no AllowAutoTopicCreation field, which means
// "allowed") and produces to a topic nobody created.
func TestKafkaPythonAutoCreate(t *testing.T) {
	needPython(t, kafkaPython, "none")
	b := harness.StartBroker(t, "num.partitions=3")
	recs := makeRecords(kafkaPython, "none", 5, true)
	acks := producePy(t, b, kafkaPython, "py-autocreated", "none", "", recs, false)
	if len(acks) != len(recs) {
		t.Fatalf("%d acks, want %d", len(acks), len(recs))
	}
	adm := newAdmin(t, b)
	md, err := adm.Metadata(harness.Ctx(t, opTimeout), "py-autocreated")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["py-autocreated"]
	if td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("auto-created topic: err %v, %d partitions, want num.partitions=3", td.Err, len(td.Partitions))
	}
	got := consumeKgo(t, b, map[string]int{"py-autocreated": len(recs)})
	if len(got) != len(recs) {
		t.Fatalf("read back %d records, want %d", len(got), len(recs))
	}
}

// TestMetadataAutoCreateHasLeader sends a raw Metadata request with
// AllowAutoTopicCreation for a new topic: the same answer must carry the
// topic without error and with a leader for every partition (clients such
// as segmentio/kafka-go give up otherwise).
func TestMetadataAutoCreateHasLeader(t *testing.T) {
	b := harness.StartBroker(t, "num.partitions=2")
	for _, version := range []int16{1, 4, 12} {
		// Pin the version: the client would otherwise use our maximum.
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.Metadata.Int16(), version)
		cl := b.Client(kgo.MaxVersions(vs))
		topic := fmt.Sprintf("auto-md-v%d", version)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(version)
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(harness.Ctx(t, opTimeout), cl)
		if err != nil {
			t.Fatalf("metadata v%d: %v", version, err)
		}
		if resp.GetVersion() != version {
			t.Fatalf("sent metadata v%d, want v%d", resp.GetVersion(), version)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("metadata v%d: %d topics in answer", version, len(resp.Topics))
		}
		rtopic := resp.Topics[0]
		if rtopic.ErrorCode != 0 || len(rtopic.Partitions) != 2 {
			t.Fatalf("metadata v%d: topic error %d, %d partitions; want 0 and 2", version, rtopic.ErrorCode, len(rtopic.Partitions))
		}
		for _, p := range rtopic.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				t.Errorf("metadata v%d: partition %d error %d leader %d, want a leader at once", version, p.Partition, p.ErrorCode, p.Leader)
			}
		}
	}
}
