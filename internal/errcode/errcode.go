// Package errcode is the one table from the errors of weir's layers to
// Kafka's error codes: the broker answers clients by it and the
// controller answers brokers by it. Each layer's sentinel errors are
// listed once, here.
package errcode

import (
	"context"
	"errors"
	"strings"

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
	if _, code, _ := cause(err); code != nil {
		return code.Code
	}
	return kerr.UnknownServerError.Code
}

// Name is Kafka's name of an error code, as its Errors enum (and the
// error tag of its ErrorsPerSec metric) spells it: NONE for 0,
// UNKNOWN_SERVER_ERROR for a code Kafka does not define (as Kafka's
// Errors.forCode reads one), so that the names are a bounded set.
func Name(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case kerr.NotLeaderForPartition.Code:
		// kerr keeps the name Kafka used before 2.6 (KIP-392).
		return "NOT_LEADER_OR_FOLLOWER"
	}
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return ke.Message
	}
	return kerr.UnknownServerError.Message
}

// cause is the error that decides err's code (a *kerr.Error, or a
// sentinel of the table), the code, and whether the text after the cause
// is the whole message for the client; nils if err wraps none.
func cause(err error) (error, *kerr.Error, bool) {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke, ke, true
	}
	for _, m := range table {
		if errors.Is(err, m.err) {
			return m.err, m.code, m.detail
		}
	}
	return nil, nil, false
}

// Message is the text for responses that carry one (nil for success).
// For an error about what the request asked (a bad config, a topic that
// does not exist: a *kerr.Error or a metadata sentinel), which reads
// "operation on resource: sentinel: detail", it is the detail alone: the
// client knows what it asked and the code names the sentinel, so a client
// that prints "what failed: CODE: message" says each thing once. With no
// detail there is no message (the code's description says it all). Any
// other error is sent whole: what the broker was doing (which log, which
// segment) is what an operator needs.
func Message(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	if c, _, detail := cause(err); detail {
		text := c.Error()
		if i := strings.Index(s, text+": "); i >= 0 {
			s = s[i+len(text)+2:]
		} else if strings.HasSuffix(s, text) {
			return nil
		}
	}
	return &s
}

// detail marks the errors whose text after the sentinel is the message
// (see Message): the metadata package's, which wrap their sentinel as
// "sentinel: detail" and are about what a request asked for.
var table = []struct {
	err    error
	code   *kerr.Error
	detail bool
}{
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange, false},
	{storage.ErrMessageTooLarge, kerr.MessageTooLarge, false},
	{storage.ErrRecordListTooLarge, kerr.RecordListTooLarge, false},
	{storage.ErrInvalidTimestamp, kerr.InvalidTimestamp, false},
	{storage.ErrStorage, kerr.KafkaStorageError, false},
	{storage.ErrClosed, kerr.NotLeaderForPartition, false},
	{recordbatch.ErrCorrupt, kerr.CorruptMessage, false},
	{recordbatch.ErrInvalidRecord, kerr.InvalidRecord, false},
	{replica.ErrNotLeader, kerr.NotLeaderForPartition, false},
	{replica.ErrNotReplica, kerr.NotLeaderForPartition, false},
	{replica.ErrRemoved, kerr.NotLeaderForPartition, false},
	{replica.ErrNotEnoughReplicas, kerr.NotEnoughReplicas, false},
	{replica.ErrNotEnoughAfter, kerr.NotEnoughReplicasAfterAppend, false},
	{replica.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch, false},
	{replica.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch, false},
	{producerstate.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber, false},
	{producerstate.ErrInvalidEpoch, kerr.InvalidProducerEpoch, false},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists, true},
	{metadata.ErrTopicCreationUnsettled, kerr.RequestTimedOut, true},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition, true},
	{metadata.ErrUnknownTopicID, kerr.UnknownTopicID, true},
	{metadata.ErrInvalidTopic, kerr.InvalidTopicException, true},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions, true},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor, true},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment, true},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig, true},
	{metadata.ErrNotController, kerr.NotController, true},
	{metadata.ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch, true},
	{metadata.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch, true},
	// Kafka answers an AlterPartition from a broker that is not the
	// partition's leader with INVALID_REQUEST.
	{metadata.ErrNotPartitionLeader, kerr.InvalidRequest, true},
	{metadata.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion, true},
	{metadata.ErrIneligibleReplica, kerr.IneligibleReplica, true},
	{metadata.ErrElectionNotNeeded, kerr.ElectionNotNeeded, true},
	{metadata.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable, true},
	{metadata.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable, true},
	{metadata.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress, true},
	{metadata.ErrBrokerNotRegistered, kerr.BrokerIDNotRegistered, true},
	{metadata.ErrDuplicateVoter, kerr.DuplicateVoter, true},
	{metadata.ErrVoterNotFound, kerr.VoterNotFound, true},
	{metadata.ErrInvalidRequest, kerr.InvalidRequest, true},
	{metadata.ErrPolicyViolation, kerr.PolicyViolation, true},
	{context.DeadlineExceeded, kerr.RequestTimedOut, false},
}
