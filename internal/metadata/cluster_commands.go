package metadata

// Commands of the broker lifecycle and of partition state changes. Like
// every command they carry only what the proposer decided; the rules
// (which ISRs shrink, who leads next) are applied by the state machine, so
// every replica computes the same partitions from the same log.
const (
	cmdFenceBroker             cmdType = "fence_broker"
	cmdUnfenceBroker           cmdType = "unfence_broker"
	cmdBeginControlledShutdown cmdType = "begin_controlled_shutdown"
	cmdAlterPartition          cmdType = "alter_partition"
	cmdElectLeaders            cmdType = "elect_leaders"
)

// brokerRef names one registration of a broker: a command for an older
// epoch (a restarted broker's stale heartbeat) is refused.
type brokerRef struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

type fenceBrokerCmd struct{ brokerRef }

type unfenceBrokerCmd struct{ brokerRef }

type controlledShutdownCmd struct{ brokerRef }

// alterPartitionCmd is one AlterPartition request: ISR changes proposed by
// the leader of each partition, each a compare-and-set on its epochs.
type alterPartitionCmd struct {
	BrokerID    int32       `json:"brokerId"`
	BrokerEpoch int64       `json:"brokerEpoch"`
	Updates     []ISRUpdate `json:"updates"`
}

// electLeadersCmd asks for elections on the given partitions.
type electLeadersCmd struct {
	Type       ElectionType   `json:"type"`
	Partitions []partitionRef `json:"partitions"`
}

// partitionRef names a partition by topic id, so a command never acts on a
// later topic of the same name.
type partitionRef struct {
	TopicID   [16]byte `json:"topicId"`
	Partition int32    `json:"partition"`
}

// clusterPayload returns the payload type of a lifecycle or partition
// command, or nil for a type this file does not define.
func clusterPayload(t cmdType) any {
	switch t {
	case cmdFenceBroker:
		return &fenceBrokerCmd{}
	case cmdUnfenceBroker:
		return &unfenceBrokerCmd{}
	case cmdBeginControlledShutdown:
		return &controlledShutdownCmd{}
	case cmdAlterPartition:
		return &alterPartitionCmd{}
	case cmdElectLeaders:
		return &electLeadersCmd{}
	}
	return nil
}
