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
	// ErrTopicCreationUnsettled: REQUEST_TIMED_OUT (7), retriable. The
	// name is held by a creation not finished yet (still preparing, or
	// cut short by a controller failover and being undone): saying the
	// topic exists could name a topic that never appears.
	ErrTopicCreationUnsettled = errors.New("an earlier creation of this topic is not settled yet")
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

	// Cluster membership and partition state (the KRaft controller APIs).

	// ErrStaleBrokerEpoch: STALE_BROKER_EPOCH (77). A fence, unfence,
	// controlled shutdown or AlterPartition named a broker epoch that is
	// not the broker's current registration (or an unregistered broker),
	// as Kafka's controller answers a heartbeat or AlterPartition then.
	ErrStaleBrokerEpoch = errors.New("stale broker epoch")
	// ErrUnknownTopicID: UNKNOWN_TOPIC_ID (100). AlterPartition v2+ names
	// its topic by id and the id is unknown.
	ErrUnknownTopicID = errors.New("unknown topic id")
	// ErrFencedLeaderEpoch: FENCED_LEADER_EPOCH (74). AlterPartition came
	// with an older leader epoch than the partition's. (One newer than the
	// controller's, or a newer partition epoch, is ErrNotController, as in
	// Kafka: this controller is behind, and the leader retries.)
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrNotPartitionLeader: AlterPartition from a broker that does not
	// lead the partition. Kafka's controller answers INVALID_REQUEST (42)
	// here (its leader side then gives up until new metadata arrives), not
	// NOT_LEADER_OR_FOLLOWER (6), the data path's code for the same fact.
	ErrNotPartitionLeader = errors.New("not the partition leader")
	// ErrInvalidUpdateVersion: INVALID_UPDATE_VERSION (95). AlterPartition
	// came with an older partition epoch: the compare-and-set failed.
	ErrInvalidUpdateVersion = errors.New("invalid update version")
	// ErrIneligibleReplica: INELIGIBLE_REPLICA (107; Kafka answers
	// AlterPartition v0-1 with OPERATION_NOT_ATTEMPTED, 55). The new ISR
	// names a broker that is not registered, fenced, in controlled
	// shutdown, or not at the broker epoch the request gave for it.
	ErrIneligibleReplica = errors.New("ineligible replica")
	// ErrElectionNotNeeded: ELECTION_NOT_NEEDED (84). The preferred replica
	// already leads, or (unclean) the partition has a leader.
	ErrElectionNotNeeded = errors.New("election not needed")
	// ErrPreferredLeaderNotAvailable: PREFERRED_LEADER_NOT_AVAILABLE (80).
	// The preferred replica is not in the ISR or not eligible.
	ErrPreferredLeaderNotAvailable = errors.New("preferred leader not available")
	// ErrEligibleLeadersNotAvailable: ELIGIBLE_LEADERS_NOT_AVAILABLE (83).
	// An unclean election found no live replica.
	ErrEligibleLeadersNotAvailable = errors.New("eligible leaders not available")
	// ErrNoReassignmentInProgress: NO_REASSIGNMENT_IN_PROGRESS (85). A
	// cancellation named a partition that is not being reassigned.
	ErrNoReassignmentInProgress = errors.New("no reassignment in progress")

	// Cluster operations (ops_commands.go, quorum.go).

	// ErrBrokerNotRegistered: BROKER_ID_NOT_REGISTERED (102).
	// UnregisterBroker named a broker that is not registered.
	ErrBrokerNotRegistered = errors.New("broker id not registered")
	// ErrDuplicateVoter: DUPLICATE_VOTER (126). AddRaftVoter named a voter.
	ErrDuplicateVoter = errors.New("duplicate voter")
	// ErrVoterNotFound: VOTER_NOT_FOUND (127). RemoveRaftVoter named a
	// node that is not a voter.
	ErrVoterNotFound = errors.New("voter not found")
)
