package broker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/storage"
)

// lookupTopic finds a topic by id (requests that use topic ids) or name.
func lookupTopic(img *metadata.Image, byID bool, name string, id [16]byte) (*metadata.Topic, *kerr.Error) {
	if byID {
		if t := img.TopicByID(id); t != nil {
			return t, nil
		}
		return nil, kerr.UnknownTopicID
	}
	if t := img.TopicByName(name); t != nil {
		return t, nil
	}
	return nil, kerr.UnknownTopicOrPartition
}

// missingPartitionCode explains why this broker has no replica for tp.
func (b *Broker) missingPartitionCode(tp storage.TopicPartition) int16 {
	part, ok := b.meta.Image().Partition(tp.Topic, tp.Partition)
	switch {
	case !ok:
		return kerr.UnknownTopicOrPartition.Code
	case part.Leader < 0:
		return kerr.LeaderNotAvailable.Code
	case part.Leader != b.nodeID:
		return kerr.NotLeaderForPartition.Code
	default:
		// We lead it but the replica is not open yet (just created).
		return kerr.LeaderNotAvailable.Code
	}
}

// handleMetadata lists brokers and topics. Unknown topics are created when
// auto-creation is on and the request allows it (always, below v4, which
// has no such field) and answered with their ready leader.
//
// Each topic is answered once however often it is named: Kafka keeps the
// requested names and ids in sets (KafkaApis.handleTopicMetadataRequest).
func (b *Broker) handleMetadata(ctx context.Context, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := b.meta.Image()
	allowCreate := b.opts.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	var answers []kmsg.MetadataResponseTopic
	if all {
		for _, name := range img.SortedTopicNames() {
			answers = append(answers, topicMetadata(img, img.TopicByName(name), req.Version))
		}
	} else {
		idx, _ := distinct(req.Topics, metadataTopicKey)
		for _, i := range idx {
			answers = append(answers, b.requestedTopic(ctx, &img, req.Topics[i], allowCreate, req.Version))
		}
	}

	// As Kafka: only live (unfenced) brokers are listed.
	for _, br := range img.LiveBrokers() {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = br.ID, br.Host, br.Port
		if br.Rack != "" {
			rack := br.Rack
			mb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := img.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = b.clientControllerID(img)
	resp.Topics = answers
	return resp, nil
}

// metadataTopicKey names a requested topic: by name, or (v10+) by id.
func metadataTopicKey(rt kmsg.MetadataRequestTopic) topicKey {
	if rt.Topic == nil {
		return topicKey{byID: true, id: rt.TopicID}
	}
	return topicByName(*rt.Topic)
}

func (b *Broker) requestedTopic(ctx context.Context, img **metadata.Image, rt kmsg.MetadataRequestTopic, allowCreate bool, version int16) kmsg.MetadataResponseTopic {
	if rt.Topic == nil {
		// v10+ lookup by id.
		if t := (*img).TopicByID(rt.TopicID); t != nil {
			return topicMetadata(*img, t, version)
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.TopicID = rt.TopicID
		mt.ErrorCode = kerr.UnknownTopicID.Code
		return mt
	}
	name := *rt.Topic
	if t := (*img).TopicByName(name); t != nil {
		return topicMetadata(*img, t, version)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = rt.Topic
	if !allowCreate {
		// Kafka tells a bad name from a missing topic even when it will
		// not create one: clients stop retrying on INVALID_TOPIC_EXCEPTION.
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if config.ValidateTopicName(name) != nil {
			mt.ErrorCode = kerr.InvalidTopicException.Code
		}
		return mt
	}
	var t *metadata.Topic
	var err error
	switch name {
	case offsetsTopic:
		// Internal topics get their own settings (partition count,
		// compaction), as Kafka's auto-creation does.
		t, err = b.ensureOffsetsTopic(ctx)
	case "__transaction_state":
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return mt
	default:
		t, err = b.createTopic(ctx, metadata.CreateTopic{Name: name, NumPartitions: -1, ReplicationFactor: -1})
	}
	switch {
	case errors.Is(err, metadata.ErrTopicExists):
		// Created concurrently by another request.
		*img = b.meta.Image()
		if t := (*img).TopicByName(name); t != nil {
			return topicMetadata(*img, t, version)
		}
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
	case err != nil:
		mt.ErrorCode = errorCode(err)
		if mt.ErrorCode == kerr.UnknownServerError.Code {
			b.log.Error("auto-create topic", slog.String("topic", name), slog.Any("err", err))
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
		}
	default:
		*img = b.meta.Image()
		return topicMetadata(*img, t, version)
	}
	return mt
}

func topicMetadata(img *metadata.Image, t *metadata.Topic, version int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(name)
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
		mp.Replicas = append([]int32(nil), p.Replicas...)
		mp.ISR = append([]int32(nil), p.ISR...)
		mp.OfflineReplicas = offlineReplicas(img, p.Replicas)
		if p.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// offlineReplicas lists the replicas whose brokers are fenced or gone.
func offlineReplicas(img *metadata.Image, replicas []int32) []int32 {
	out := []int32{}
	for _, id := range replicas {
		if br, ok := img.Broker(id); !ok || br.Fenced {
			out = append(out, id)
		}
	}
	return out
}

// clientControllerID is the controller id clients are told: the active
// controller when it is a live broker (admin clients then reach it
// directly), else this broker, which forwards.
func (b *Broker) clientControllerID(img *metadata.Image) int32 {
	if id, _, ok := b.meta.Leader(); ok {
		if br, ok := img.Broker(id); ok && !br.Fenced {
			return id
		}
	}
	return b.nodeID
}
