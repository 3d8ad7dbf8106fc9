package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/server"
)

// clusterMetadataTopic is the name of Kafka's KRaft log, which Kafka never
// lets a client create.
const clusterMetadataTopic = "__cluster_metadata"

// handleCreateTopics creates topics (or only validates them). Configs
// with a null value are ignored, as Kafka does.
//
// A name given more than once is answered once, INVALID_REQUEST "Duplicate
// topic name.", and none of its copies is created, as Kafka's controller
// does (ControllerApis.createTopics).
//
// Internal topics: Kafka refuses __cluster_metadata with INVALID_REQUEST
// "Creation of internal topic __cluster_metadata is prohibited." but lets
// clients create __consumer_offsets and __transaction_state. weir refuses
// those too, with the same code and words: a client's copy (one partition,
// not compacted) would become the group coordinator's log. The broker
// creates them itself, with their own settings, when first needed.
//
// On the CONTROLLER listener the request comes from a broker (an
// auto-creation forwarded to the active controller): there the internal
// topics may be created, with their own settings.
func (b *Broker) handleCreateTopics(ctx context.Context, rc *server.RequestContext, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	fromBroker := rc != nil && rc.Listener == b.opts.ControllerListener
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	idx, dup := distinct(req.Topics, func(rt kmsg.CreateTopicsRequestTopic) string { return rt.Topic })
	for _, i := range idx {
		rt := req.Topics[i]
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		switch {
		case dup[rt.Topic]:
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, ptr("Duplicate topic name.")
		case (isInternalTopic(rt.Topic) && !fromBroker) || rt.Topic == clusterMetadataTopic:
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = ptr(fmt.Sprintf("Creation of internal topic %s is prohibited.", rt.Topic))
		default:
			b.createRequestedTopic(ctx, rt, req.ValidateOnly, fromBroker && isInternalTopic(rt.Topic), &st)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) createRequestedTopic(ctx context.Context, rt kmsg.CreateTopicsRequestTopic, validateOnly, internal bool, st *kmsg.CreateTopicsResponseTopic) {
	ct := metadata.CreateTopic{
		Name:              rt.Topic,
		NumPartitions:     rt.NumPartitions,
		ReplicationFactor: rt.ReplicationFactor,
		Configs:           map[string]string{},
		ValidateOnly:      validateOnly,
		Internal:          internal,
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
		return
	}
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

// handleDeleteTopics deletes topics by name (or, v6+, by id).
//
// A topic named (or an id given) more than once is answered once,
// INVALID_REQUEST "Duplicate topic name." ("... id."), and not deleted, as
// Kafka's controller does (ControllerApis.deleteTopics).
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
	idx, dup := distinct(targets, deleteTarget)
	for _, i := range idx {
		rt := targets[i]
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		if key := deleteTarget(rt); dup[key] {
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = ptr("Duplicate topic name.")
			if key.byID {
				st.ErrorMessage = ptr("Duplicate topic id.")
			}
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
			} else if failed := b.reconcile(); len(failed) > 0 {
				b.log.Warn("delete topic: some local logs not removed yet; retrying", "topic", name, "partitions", len(failed))
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteTarget names a DeleteTopics entry: its name, else its topic id.
func deleteTarget(rt kmsg.DeleteTopicsRequestTopic) topicKey {
	if rt.Topic != nil {
		return topicByName(*rt.Topic)
	}
	return topicKey{byID: true, id: rt.TopicID}
}

// handleCreatePartitions grows topics to a new partition count.
//
// A topic named more than once is answered once, INVALID_REQUEST
// "Duplicate topic name.", and not grown, as Kafka's controller does
// (ControllerApis.createPartitions).
//
// Once the controller has recorded the new partitions they exist, as in
// Kafka, which also opens the replicas afterwards: a local replica that
// cannot be opened yet does not fail the request (partitions cannot be
// taken back), it is retried in the background until it opens.
func (b *Broker) handleCreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := requestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	idx, dup := distinct(req.Topics, func(rt kmsg.CreatePartitionsRequestTopic) string { return rt.Topic })
	for _, i := range idx {
		rt := req.Topics[i]
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if dup[rt.Topic] {
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, ptr("Duplicate topic name.")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		var assignments [][]int32
		for _, a := range rt.Assignment {
			assignments = append(assignments, a.Replicas)
		}
		err := b.meta.CreatePartitions(ctx, rt.Topic, rt.Count, assignments, req.ValidateOnly)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
		} else if !req.ValidateOnly {
			if failed := b.reconcile(); len(failed) > 0 {
				b.log.Warn("create partitions: some local replicas not open yet; retrying", "topic", rt.Topic, "partitions", len(failed))
			}
			if t := b.meta.Image().TopicByName(rt.Topic); t != nil {
				b.awaitReplicas(ctx, t.Partitions)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// handleDescribeCluster lists the brokers and the controller.
//
// Version notes: v1+ endpoint type (brokers only: controller endpoints,
// KIP-919, are refused); v2+ IncludeFencedBrokers lists fenced brokers
// too, with IsFenced.
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
	resp.ControllerID = b.clientControllerID(img)
	resp.ClusterAuthorizedOperations = -2147483648
	brokers := img.LiveBrokers()
	if req.Version >= 2 && req.IncludeFencedBrokers {
		brokers = img.Brokers()
	}
	for _, br := range brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.IsFenced = br.ID, br.Host, br.Port, br.Fenced
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
