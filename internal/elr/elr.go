// Package elr reads partitions' eligible leader replicas (KIP-966) from a
// cluster, for the CLI and the console: DescribeTopicPartitions is the
// one answer that carries them.
package elr

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Map is the eligible leader replicas of the partitions that have any, by
// topic and partition; nil when the cluster does not tell.
type Map map[string]map[int32][]int32

// Of is one partition's eligible leader replicas (none: nil).
func (m Map) Of(topic string, partition int32) []int32 { return m[topic][partition] }

// Describe pages through DescribeTopicPartitions for topics (found to
// exist already), the only answer that carries the ELR. A cluster that
// does not serve it (Kafka before 3.7) has no ELR to show: nil, no error.
func Describe(ctx context.Context, cl *kgo.Client, topics []string) (Map, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	vers, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	if !slices.ContainsFunc(vers.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool {
		return k.ApiKey == kmsg.DescribeTopicPartitions.Int16()
	}) {
		return nil, nil
	}
	out := Map{}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit = 2000
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("describe topic partitions: %w", err)
		}
		for _, rt := range resp.Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				// Deleted since it was listed: the description says so.
				continue
			}
			for _, p := range rt.Partitions {
				if len(p.EligibleLeaderReplicas) > 0 && rt.Topic != nil {
					if out[*rt.Topic] == nil {
						out[*rt.Topic] = map[int32][]int32{}
					}
					out[*rt.Topic][p.Partition] = p.EligibleLeaderReplicas
				}
			}
		}
		nc := resp.NextCursor
		if nc == nil {
			return out, nil
		}
		if c := req.Cursor; c != nil && c.Topic == nc.Topic && c.Partition == nc.Partition {
			return nil, fmt.Errorf("describe topic partitions: the answer to cursor %s/%d points at itself", nc.Topic, nc.Partition)
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: nc.Topic, Partition: nc.Partition}
	}
}
