package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
)

// handleCreateTopics creates topics (or only validates them). Configs
// with a null value are ignored, as Kafka does.
func (b *Broker) handleCreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		if seen[rt.Topic] > 1 {
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = errorMessage(fmt.Errorf("topic %q appears more than once in the request", rt.Topic))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		ct := metadata.CreateTopic{
			Name:              rt.Topic,
			NumPartitions:     rt.NumPartitions,
			ReplicationFactor: rt.ReplicationFactor,
			Configs:           map[string]string{},
			ValidateOnly:      req.ValidateOnly,
		}
		if len(rt.ReplicaAssignment) > 0 {
			ct.Assignments = map[int32][]int32{}
			for _, a := range rt.ReplicaAssignment {
				ct.Assignments[a.Partition] = a.Replicas
			}
		}
		for _, c := range rt.Configs {
			if c.Value != nil {
				ct.Configs[c.Name] = *c.Value
			}
		}
		t, err := b.createTopic(ctx, ct)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		} else if t != nil {
			st.TopicID = t.ID
			st.NumPartitions = int32(len(t.Partitions))
			if len(t.Partitions) > 0 {
				st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
			}
			for _, e := range b.topicConfigEntries(t.Configs) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				value := e.Value
				c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, &value, e.ReadOnly, int8(e.Source), e.Sensitive
				st.Configs = append(st.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// handleDeleteTopics deletes topics by name (or, v6+, by id).
func (b *Broker) handleDeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	targets := req.Topics
	if req.Version < 6 {
		targets = nil
		for _, name := range req.TopicNames {
			n := name
			targets = append(targets, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	// Kafka refuses a topic named twice in one request, rather than
	// deleting it once and calling the second entry unknown.
	seen := map[string]int{}
	for _, rt := range targets {
		seen[deleteTarget(rt)]++
	}
	for _, rt := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		if seen[deleteTarget(rt)] > 1 {
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = errorMessage(fmt.Errorf("topic %s appears more than once in the request", deleteTarget(rt)))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		img := b.meta.Image()
		var t *metadata.Topic
		if rt.Topic != nil {
			t = img.TopicByName(*rt.Topic)
		} else {
			t = img.TopicByID(rt.TopicID)
		}
		switch {
		case !b.opts.Config.DeleteTopicEnable:
			st.ErrorCode = kerr.TopicDeletionDisabled.Code
			st.ErrorMessage = errorMessage(fmt.Errorf("topic deletion is disabled (delete.topic.enable=false)"))
		case t == nil && rt.Topic == nil:
			st.ErrorCode = kerr.UnknownTopicID.Code
		case t == nil:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			if err := b.meta.DeleteTopic(ctx, name); err != nil {
				st.ErrorCode = errorCode(err)
				st.ErrorMessage = errorMessage(err)
			} else if err := b.reconcile(); err != nil {
				b.log.Warn("delete topic: removing local logs", "topic", name, "err", err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteTarget names a DeleteTopics entry: its name, else its topic id.
func deleteTarget(rt kmsg.DeleteTopicsRequestTopic) string {
	if rt.Topic != nil {
		return *rt.Topic
	}
	return metadata.FormatUUID(rt.TopicID)
}

// handleCreatePartitions grows topics to a new partition count.
func (b *Broker) handleCreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var assignments [][]int32
		for _, a := range rt.Assignment {
			assignments = append(assignments, a.Replicas)
		}
		err := b.meta.CreatePartitions(ctx, rt.Topic, rt.Count, assignments, req.ValidateOnly)
		if err == nil && !req.ValidateOnly {
			err = b.reconcile()
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// handleDescribeCluster lists the brokers and the controller.
func (b *Broker) handleDescribeCluster(ctx context.Context, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	img := b.meta.Image()
	resp.EndpointType = req.EndpointType
	if req.EndpointType > 1 {
		// 2 = controller endpoints (KIP-919): not served to clients here.
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp, nil
	}
	resp.ClusterID = img.ClusterID()
	resp.ControllerID = b.nodeID
	resp.ClusterAuthorizedOperations = -2147483648
	for _, br := range img.Brokers() {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = br.ID, br.Host, br.Port
		if br.Rack != "" {
			rack := br.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}

// requestTimeout bounds an admin request by its timeout (at least 1 s of
// grace, since a zero timeout means "don't wait" only for the reply).
func requestTimeout(ctx context.Context, ms int32) (context.Context, context.CancelFunc) {
	if ms < 1000 {
		ms = 1000
	}
	return context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
}
