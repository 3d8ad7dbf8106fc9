package interop

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// createErr is the error of creating one topic through kadm, request
// and topic level alike.
func createErr(t *testing.T, adm *kadm.Client, validate bool, partitions int32, rf int16, configs map[string]*string, topic string) error {
	t.Helper()
	ctx := harness.Ctx(t, opTimeout)
	var (
		resps kadm.CreateTopicResponses
		err   error
	)
	if validate {
		resps, err = adm.ValidateCreateTopics(ctx, partitions, rf, configs, topic)
	} else {
		resps, err = adm.CreateTopics(ctx, partitions, rf, configs, topic)
	}
	if err != nil {
		return err
	}
	r, ok := resps[topic]
	if !ok {
		t.Fatalf("create %q: no answer for the topic: %+v", topic, resps)
	}
	return r.Err
}

// topicExists asks Metadata (without auto-create) whether topic exists.
func topicExists(t *testing.T, adm *kadm.Client, topic string) bool {
	t.Helper()
	md, err := adm.Metadata(harness.Ctx(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("metadata %s: %v", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok {
		return false
	}
	switch {
	case td.Err == nil:
		return true
	case errors.Is(td.Err, kerr.UnknownTopicOrPartition), errors.Is(td.Err, kerr.InvalidTopicException):
		return false
	}
	t.Fatalf("metadata %s: %v", topic, td.Err)
	return false
}

// TestAdminCreateTopics covers CreateTopics through kadm: a real create
// with configs, validate-only, duplicates and every kind of bad request.
func TestAdminCreateTopics(t *testing.T) {
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	ctx := harness.Ctx(t, opTimeout)

	resps, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": strp("3600000"), "cleanup.policy": strp("compact")}, "adm-created")
	if err != nil {
		t.Fatal(err)
	}
	r := resps["adm-created"]
	if r.Err != nil || r.NumPartitions != 3 || r.ReplicationFactor != 1 || r.ID == (kadm.TopicID{}) {
		t.Fatalf("create: %+v, want 3 partitions, RF 1 and a topic id", r)
	}
	waitLeaders(t, adm, "adm-created", 3)
	md, err := adm.Metadata(ctx, "adm-created")
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics["adm-created"]
	if td.ID != r.ID {
		t.Errorf("metadata topic id %v, create said %v", td.ID, r.ID)
	}
	for _, p := range td.Partitions {
		if len(p.Replicas) != 1 || len(p.ISR) != 1 || p.Replicas[0] != p.Leader {
			t.Errorf("partition %d: leader %d replicas %v isr %v, want one replica leading", p.Partition, p.Leader, p.Replicas, p.ISR)
		}
	}

	if err := createErr(t, adm, true, 2, 1, nil, "adm-validated"); err != nil {
		t.Fatalf("validate-only create: %v", err)
	}
	if topicExists(t, adm, "adm-validated") {
		t.Error("validate-only create left a topic behind")
	}

	for _, c := range []struct {
		name       string
		validate   bool
		partitions int32
		rf         int16
		configs    map[string]*string
		topic      string
		want       error
	}{
		{"duplicate", false, 1, 1, nil, "adm-created", kerr.TopicAlreadyExists},
		{"duplicate, validate-only", true, 1, 1, nil, "adm-created", kerr.TopicAlreadyExists},
		{"name with a space", false, 1, 1, nil, "bad name", kerr.InvalidTopicException},
		{"name with a slash", false, 1, 1, nil, "a/b", kerr.InvalidTopicException},
		{"name ..", false, 1, 1, nil, "..", kerr.InvalidTopicException},
		{"name too long", false, 1, 1, nil, strings.Repeat("x", 250), kerr.InvalidTopicException},
		{"zero partitions", false, 0, 1, nil, "adm-zero", kerr.InvalidPartitions},
		{"replication factor above brokers", false, 1, 3, nil, "adm-rf3", kerr.InvalidReplicationFactor},
		{"bad config value", false, 1, 1, map[string]*string{"retention.ms": strp("soon")}, "adm-badcfg", kerr.InvalidConfig},
		{"bad cleanup.policy", false, 1, 1, map[string]*string{"cleanup.policy": strp("shred")}, "adm-badpolicy", kerr.InvalidConfig},
		{"unknown config", false, 1, 1, map[string]*string{"no.such.config": strp("1")}, "adm-unknowncfg", kerr.InvalidConfig},
	} {
		err := createErr(t, adm, c.validate, c.partitions, c.rf, c.configs, c.topic)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if c.topic != "adm-created" && topicExists(t, adm, c.topic) {
			t.Errorf("%s: a refused create left topic %q behind", c.name, c.topic)
		}
	}
}

// TestAdminPartitionsRecordsAndDelete grows a topic, refuses to shrink
// it, deletes records (moving the low watermark), and deletes and
// re-creates the topic.
func TestAdminPartitionsRecordsAndDelete(t *testing.T) {
	const topic = "adm-lifecycle"
	b := harness.StartBroker(t)
	adm := newAdmin(t, b)
	ctx := harness.Ctx(t, 2*opTimeout)
	createTopic(t, adm, topic, 2, nil)

	// Grow 2 -> 5; shrinking or keeping the count is INVALID_PARTITIONS.
	cp, err := adm.UpdatePartitions(ctx, 5, topic)
	if err == nil {
		err = cp[topic].Err
	}
	if err != nil {
		t.Fatalf("grow to 5 partitions: %v", err)
	}
	waitLeaders(t, adm, topic, 5)
	for _, n := range []int{2, 5} {
		cp, err := adm.UpdatePartitions(ctx, n, topic)
		if err == nil {
			err = cp[topic].Err
		}
		if !errors.Is(err, kerr.InvalidPartitions) {
			t.Errorf("set %d partitions on a 5-partition topic: %v, want INVALID_PARTITIONS", n, err)
		}
	}

	// Ten records on partition 0, then delete those below offset 4.
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range 10 {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte{byte('0' + i)}})
	}
	produceSync(t, cl, rs...)
	below := kadm.Offsets{}
	below.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, below)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup(topic, 0); d.Err != nil || d.LowWatermark != 4 {
		t.Fatalf("delete records below 4: %+v", d)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Offset != 4 {
		t.Errorf("earliest offset after delete records: %d, want 4", s.Offset)
	}
	// Beyond the high watermark is OFFSET_OUT_OF_RANGE.
	beyond := kadm.Offsets{}
	beyond.Add(kadm.Offset{Topic: topic, Partition: 0, At: 11})
	dr, err = adm.DeleteRecords(ctx, beyond)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup(topic, 0); !errors.Is(d.Err, kerr.OffsetOutOfRange) {
		t.Errorf("delete records beyond the end: %+v, want OFFSET_OUT_OF_RANGE", d)
	}

	// A raw fetch below the low watermark is out of range; a consumer
	// starting there resets to the earliest offset, 4.
	fetchBelow(t, b, topic, 2)
	consumer := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(2)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := consumer.PollFetches(ctx)
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 4 || string(recs[0].Value) != "4" {
		t.Errorf("consumer starting below the low watermark: %d records, first %+v; want a reset to offset 4", len(recs), first(recs))
	}

	// Delete the topic: Metadata says unknown; a re-create is a fresh,
	// empty topic with a new id.
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	oldID := md.Topics[topic].ID
	del, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = del.Err
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	harness.WaitFor(t, opTimeout, "deleted topic to disappear", func() bool { return !topicExists(t, adm, topic) })
	createTopic(t, adm, topic, 1, nil)
	md, err = adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if id := md.Topics[topic].ID; id == oldID || id == (kadm.TopicID{}) {
		t.Errorf("re-created topic id %v, old id %v: want a new one", id, oldID)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := ends.Lookup(topic, 0); e.Err != nil || e.Offset != 0 {
		t.Errorf("re-created topic end offset %+v, want 0", e)
	}
	if del, err := adm.DeleteTopic(ctx, "adm-never-existed"); err == nil && !errors.Is(del.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", del.Err)
	}
}

func first(rs []*kgo.Record) *kgo.Record {
	if len(rs) == 0 {
		return nil
	}
	return rs[0]
}

// fetchBelow fetches partition 0 at offset and expects
// OFFSET_OUT_OF_RANGE.
func fetchBelow(t *testing.T, b *harness.Broker, topic string, offset int64) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 100, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	md, err := newAdmin(t, b).Metadata(harness.Ctx(t, opTimeout), topic)
	if err != nil {
		t.Fatal(err)
	}
	ft.TopicID = md.Topics[topic].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 0, offset, 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(harness.Ctx(t, opTimeout), b.Client())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch: unexpected shape %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("fetch at %d below the low watermark: %v, want OFFSET_OUT_OF_RANGE", offset, err)
	}
}
