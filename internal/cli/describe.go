package cli

import (
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeTopicDescription prints one topic in kafka-topics --describe layout:
//
//	Topic: x	TopicId: ...	PartitionCount: N	ReplicationFactor: R	Configs: k=v,...
//		Topic: x	Partition: 0	Leader: 1	Replicas: 1	Isr: 1
//
// Only configs set on the topic itself are listed, as Kafka does; defaults
// inherited from the broker are left out.
func writeTopicDescription(w io.Writer, d kadm.TopicDetail, configs []kadm.Config) error {
	parts := d.Partitions.Sorted()
	rf := 0
	if len(parts) > 0 {
		rf = len(parts[0].Replicas)
	}
	if _, err := fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
		d.Topic, formatTopicID(d.ID), len(parts), rf, formatTopicConfigs(configs)); err != nil {
		return err
	}
	for _, p := range parts {
		leader := "none"
		if p.Leader >= 0 {
			leader = strconv.Itoa(int(p.Leader))
		}
		line := fmt.Sprintf("\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s",
			d.Topic, p.Partition, leader, joinInt32s(p.Replicas), joinInt32s(p.ISR))
		if len(p.OfflineReplicas) > 0 {
			line += "\tOffline: " + joinInt32s(p.OfflineReplicas)
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// formatTopicID prints a topic id the way Kafka's Uuid.toString does:
// URL-safe base64 without padding.
func formatTopicID(id kadm.TopicID) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// formatTopicConfigs lists the configs set on the topic itself, sorted by
// key, as k=v joined by commas.
func formatTopicConfigs(configs []kadm.Config) string {
	var kvs []string
	for _, c := range configs {
		if c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		kvs = append(kvs, c.Key+"="+v)
	}
	sort.Strings(kvs)
	return strings.Join(kvs, ",")
}

func joinInt32s(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}
