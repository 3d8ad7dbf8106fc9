package metadata

import "errors"

// Sentinel errors. Every error returned by the Controller's mutating calls
// wraps at most one of these (test with errors.Is), so the broker can map it
// to the Kafka error code named beside it; the wrapped text carries detail.
var (
	// ErrUnknownTopic: UNKNOWN_TOPIC_OR_PARTITION (3).
	ErrUnknownTopic = errors.New("unknown topic or partition")
	// ErrInvalidTopic: INVALID_TOPIC_EXCEPTION (17).
	ErrInvalidTopic = errors.New("invalid topic")
	// ErrTopicExists: TOPIC_ALREADY_EXISTS (36).
	ErrTopicExists = errors.New("topic already exists")
	// ErrInvalidPartitions: INVALID_PARTITIONS (37).
	ErrInvalidPartitions = errors.New("invalid partitions")
	// ErrInvalidReplicationFactor: INVALID_REPLICATION_FACTOR (38).
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrInvalidReplicaAssignment: INVALID_REPLICA_ASSIGNMENT (39).
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrInvalidConfig: INVALID_CONFIG (40).
	ErrInvalidConfig = errors.New("invalid config")
	// ErrNotController: NOT_CONTROLLER (41). This node is not the Raft
	// leader, or stopped being it before the command committed.
	ErrNotController = errors.New("not the controller")
	// ErrInvalidRequest: INVALID_REQUEST (42), e.g. both a partition count
	// and a manual assignment given.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrPolicyViolation: POLICY_VIOLATION (44), a partition limit
	// (PartitionLimits) would be exceeded. KIP-578 proposed a new error
	// for this (ResourceLimitReachedException) that Kafka never added;
	// POLICY_VIOLATION ("Request parameters do not satisfy the configured
	// policy") is the existing code for a request refused by a broker's
	// configured rule, where INVALID_PARTITIONS would wrongly say the
	// requested count itself is malformed.
	ErrPolicyViolation = errors.New("policy violation")
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("metadata controller closed")
)
