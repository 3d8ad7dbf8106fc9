package cli

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

func TestWriteTopicDescription(t *testing.T) {
	var id kadm.TopicID
	for i := range id {
		id[i] = byte(0xf0 + i) // bytes that differ between std and URL-safe base64
	}
	d := kadm.TopicDetail{
		Topic: "orders",
		ID:    id,
		Partitions: kadm.PartitionDetails{
			// Out of order on purpose: output is sorted by partition.
			2: {Topic: "orders", Partition: 2, Leader: -1, Replicas: []int32{3, 1, 2}, ISR: nil, OfflineReplicas: []int32{3}},
			0: {Topic: "orders", Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
			1: {Topic: "orders", Partition: 1, Leader: 2, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 1}},
		},
	}
	configs := []kadm.Config{
		{Key: "segment.bytes", Value: strp("1048576"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "cleanup.policy", Value: strp("compact"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		// Inherited values are not the topic's own: Kafka leaves them out.
		{Key: "retention.ms", Value: strp("604800000"), Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "min.insync.replicas", Value: strp("2"), Source: kmsg.ConfigSourceStaticBrokerConfig},
	}
	var buf bytes.Buffer
	if err := writeTopicDescription(&buf, d, configs, nil); err != nil {
		t.Fatal(err)
	}
	want := "Topic: orders\tTopicId: 8PHy8_T19vf4-fr7_P3-_w\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: cleanup.policy=compact,segment.bytes=1048576\n" +
		"\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n" +
		"\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,1\n" +
		"\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: \tOffline: 3\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestWriteTopicDescriptionSinglePartitionNoConfigs(t *testing.T) {
	d := kadm.TopicDetail{
		Topic:      "t",
		Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}},
	}
	var buf bytes.Buffer
	if err := writeTopicDescription(&buf, d, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := "Topic: t\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n" +
		"\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestFormatTopicConfigsSensitive(t *testing.T) {
	got := formatTopicConfigs([]kadm.Config{
		{Key: "secret", Sensitive: true, Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "a", Value: nil, Source: kmsg.ConfigSourceDynamicTopicConfig},
	})
	if want := "a=,secret=(sensitive)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBuildAlters(t *testing.T) {
	alters, err := buildAlters([]string{"retention.ms=1000", "cleanup.policy=compact,delete"}, []string{"segment.bytes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(alters) != 3 {
		t.Fatalf("alters = %+v", alters)
	}
	if alters[0].Op != kadm.SetConfig || alters[0].Name != "retention.ms" || *alters[0].Value != "1000" {
		t.Errorf("alter 0 = %+v", alters[0])
	}
	if alters[1].Op != kadm.SetConfig || *alters[1].Value != "compact,delete" {
		t.Errorf("alter 1 = %+v (commas belong to the value)", alters[1])
	}
	if alters[2].Op != kadm.DeleteConfig || alters[2].Name != "segment.bytes" || alters[2].Value != nil {
		t.Errorf("alter 2 = %+v", alters[2])
	}
	for _, bad := range []struct{ sets, dels []string }{
		{nil, nil},
		{[]string{"a=1"}, []string{"a"}},
		{[]string{"a=1", "a=2"}, nil},
		{[]string{"a"}, nil},
		{nil, []string{""}},
	} {
		if _, err := buildAlters(bad.sets, bad.dels); err == nil {
			t.Errorf("buildAlters(%q, %q): want an error", bad.sets, bad.dels)
		}
	}
}
