package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/storage/producerstate"
	"github.com/weir-project/weir/internal/storage/recordbatch"
)

// errorCode maps an error from the layers below to Kafka's error code.
// Anything unrecognised is UNKNOWN_SERVER_ERROR, and is worth a log line.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrMessageTooLarge, kerr.MessageTooLarge},
	{storage.ErrRecordListTooLarge, kerr.RecordListTooLarge},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{storage.ErrStorage, kerr.KafkaStorageError},
	{storage.ErrClosed, kerr.NotLeaderForPartition},
	{recordbatch.ErrCorrupt, kerr.CorruptMessage},
	{recordbatch.ErrInvalidRecord, kerr.InvalidRecord},
	{replica.ErrNotLeader, kerr.NotLeaderForPartition},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{producerstate.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{producerstate.ErrInvalidEpoch, kerr.InvalidProducerEpoch},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{metadata.ErrInvalidTopic, kerr.InvalidTopicException},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig},
	{metadata.ErrNotController, kerr.NotController},
	{metadata.ErrPolicyViolation, kerr.PolicyViolation},
	{metadata.ErrInvalidRequest, kerr.InvalidRequest},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}

// errorMessage is the text for responses that carry one (nil for success).
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
