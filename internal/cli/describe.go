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

	"github.com/weir-project/weir/internal/elr"
)

// writeTopicDescription prints one topic in kafka-topics --describe layout:
//
//	Topic: x	TopicId: ...	PartitionCount: N	ReplicationFactor: R	Configs: k=v,...
//		Topic: x	Partition: 0	Leader: 1	Replicas: 1	Isr: 1
//
// Offline replicas and eligible leader replicas (Elr) are added to a
// partition's line where it has any. Only configs set on the topic itself
// are listed, as Kafka does; defaults inherited from the broker are left
// out.
func writeTopicDescription(w io.Writer, d kadm.TopicDetail, configs []kadm.Config, elrs elr.Map) error {
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
		p.Topic = d.Topic // kadm sets it; the description's own name wins
		if _, err := io.WriteString(w, partitionLine(p, elrs)); err != nil {
			return err
		}
	}
	return nil
}

// writeTopicDescriptions prints each topic in kafka-topics --describe
// layout, or all of them as one JSON array (--output json).
func writeTopicDescriptions(w io.Writer, format string, ds []kadm.TopicDetail, configs map[string][]kadm.Config, elrs elr.Map) error {
	if format != outputJSON {
		for _, d := range ds {
			if err := writeTopicDescription(w, d, configs[d.Topic], elrs); err != nil {
				return err
			}
		}
		return nil
	}
	docs := make([]topicJSON, 0, len(ds))
	for _, d := range ds {
		parts := d.Partitions.Sorted()
		j := topicJSON{
			Topic: d.Topic, TopicID: formatTopicID(d.ID), PartitionCount: len(parts), Internal: d.IsInternal,
			Configs: topicConfigMap(configs[d.Topic]), Partitions: make([]partitionJSON, 0, len(parts)),
		}
		if len(parts) > 0 {
			j.ReplicationFactor = len(parts[0].Replicas)
		}
		for _, p := range parts {
			pj := toPartitionJSON(p)
			pj.ELR = elrs.Of(d.Topic, p.Partition)
			j.Partitions = append(j.Partitions, pj)
		}
		docs = append(docs, j)
	}
	return printOutput(w, format, nil, docs)
}

// topicJSON is one topic of `topic describe --output json`: the fields of
// Kafka's describe layout.
type topicJSON struct {
	Topic             string            `json:"topic"`
	TopicID           string            `json:"topicId"`
	PartitionCount    int               `json:"partitionCount"`
	ReplicationFactor int               `json:"replicationFactor"`
	Internal          bool              `json:"internal"`
	Configs           map[string]string `json:"configs"`
	Partitions        []partitionJSON   `json:"partitions"`
}

// partitionJSON is one partition line; a partition without a leader has
// leader null.
type partitionJSON struct {
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	Leader          *int32  `json:"leader"`
	Replicas        []int32 `json:"replicas"`
	Isr             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offlineReplicas"`
	// ELR is the eligible leader replicas (`topic describe` only).
	ELR []int32 `json:"elr,omitempty"`
}

func toPartitionJSON(p kadm.PartitionDetail) partitionJSON {
	j := partitionJSON{
		Topic: p.Topic, Partition: p.Partition,
		Replicas: nonNilInt32s(p.Replicas), Isr: nonNilInt32s(p.ISR), OfflineReplicas: nonNilInt32s(p.OfflineReplicas),
	}
	if p.Leader >= 0 {
		l := p.Leader
		j.Leader = &l
	}
	return j
}

func nonNilInt32s(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}

// partitionLine is one partition in kafka-topics --describe layout, with
// Offline: and Elr: where it has any.
func partitionLine(p kadm.PartitionDetail, elrs elr.Map) string {
	line := fmt.Sprintf("\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s",
		p.Topic, p.Partition, leaderName(p.Leader), joinInt32s(p.Replicas), joinInt32s(p.ISR))
	if len(p.OfflineReplicas) > 0 {
		line += "\tOffline: " + joinInt32s(p.OfflineReplicas)
	}
	if e := elrs.Of(p.Topic, p.Partition); len(e) > 0 {
		line += "\tElr: " + joinInt32s(e)
	}
	return line + "\n"
}

// writePartitionLines prints the partitions a describe filter selected,
// one kafka-topics line each, or as a JSON array.
func writePartitionLines(w io.Writer, format string, ps []kadm.PartitionDetail, elrs elr.Map) error {
	if format == outputJSON {
		docs := make([]partitionJSON, 0, len(ps))
		for _, p := range ps {
			pj := toPartitionJSON(p)
			pj.ELR = elrs.Of(p.Topic, p.Partition)
			docs = append(docs, pj)
		}
		return printOutput(w, format, nil, docs)
	}
	for _, p := range ps {
		if _, err := io.WriteString(w, partitionLine(p, elrs)); err != nil {
			return err
		}
	}
	return nil
}

type listedTopicJSON struct {
	Topic    string `json:"topic"`
	Internal bool   `json:"internal"`
}

// printTopicList prints topic names, one per line without a header (as
// kafka-topics --list), or as JSON.
func printTopicList(w io.Writer, format string, topics kadm.TopicDetails) error {
	t := &table{}
	docs := []listedTopicJSON{}
	for _, d := range topics.Sorted() {
		t.add(d.Topic)
		docs = append(docs, listedTopicJSON{Topic: d.Topic, Internal: d.IsInternal})
	}
	return printOutput(w, format, t, docs)
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
	for k, v := range topicConfigMap(configs) {
		kvs = append(kvs, k+"="+v)
	}
	sort.Strings(kvs)
	return strings.Join(kvs, ",")
}

// topicConfigMap is the configs set on the topic itself (Kafka leaves
// inherited defaults out), sensitive values masked.
func topicConfigMap(configs []kadm.Config) map[string]string {
	out := map[string]string{}
	for _, c := range configs {
		if c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		out[c.Key] = v
	}
	return out
}

func joinInt32s(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}
