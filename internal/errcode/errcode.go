// Package errcode is the one table from the errors of weir's layers to
// Kafka's error codes: the broker answers clients by it and the
// controller answers brokers by it. Each layer's sentinel errors are
// listed once, here.
package errcode

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

// Code maps an error to Kafka's error code: 0 for nil, the code of a
// wrapped *kerr.Error, else the first sentinel of the table that it
// wraps, else UNKNOWN_SERVER_ERROR (worth a log line at the caller).
func Code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range table {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// Message is the text for responses that carry one (nil for success).
func Message(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

var table = []struct {
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
	{replica.ErrNotReplica, kerr.NotLeaderForPartition},
	{replica.ErrRemoved, kerr.NotLeaderForPartition},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{replica.ErrNotEnoughAfter, kerr.NotEnoughReplicasAfterAppend},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{producerstate.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{producerstate.ErrInvalidEpoch, kerr.InvalidProducerEpoch},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{metadata.ErrUnknownTopicID, kerr.UnknownTopicID},
	{metadata.ErrInvalidTopic, kerr.InvalidTopicException},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig},
	{metadata.ErrNotController, kerr.NotController},
	{metadata.ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch},
	{metadata.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	// Kafka answers an AlterPartition from a broker that is not the
	// partition's leader with INVALID_REQUEST.
	{metadata.ErrNotPartitionLeader, kerr.InvalidRequest},
	{metadata.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion},
	{metadata.ErrIneligibleReplica, kerr.IneligibleReplica},
	{metadata.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
	{metadata.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable},
	{metadata.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable},
	{metadata.ErrInvalidRequest, kerr.InvalidRequest},
	{metadata.ErrPolicyViolation, kerr.PolicyViolation},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}
