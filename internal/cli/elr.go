package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// elrs is the eligible leader replicas (KIP-966) of the partitions that
// have any, by topic and partition; nil when the cluster does not tell.
type elrs map[string]map[int32][]int32

func (e elrs) of(topic string, partition int32) []int32 { return e[topic][partition] }

// describeELRs pages through DescribeTopicPartitions for topics (found to
// exist already), the only answer that carries the ELR. A cluster that
// does not serve it (Kafka before 3.7) has no ELR to show: nil, no error.
func describeELRs(ctx context.Context, cl *kgo.Client, topics []string) (elrs, error) {
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
	out := elrs{}
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
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: nc.Topic, Partition: nc.Partition}
	}
}
