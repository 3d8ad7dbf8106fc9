package metadata

import (
	"encoding/json"
	"fmt"
)

// A command is one Raft log entry: a JSON envelope with a type tag and a
// type-specific payload. The leader decides everything non-deterministic
// (ids, placement) before proposing, so applying a command is a pure
// function of the previous image and the command bytes.
type cmdType string

const (
	cmdBootstrap           cmdType = "bootstrap"
	cmdStaticDefaults      cmdType = "static_defaults"
	cmdRegisterBroker      cmdType = "register_broker"
	cmdCreateTopic         cmdType = "create_topic"
	cmdDeleteTopic         cmdType = "delete_topic"
	cmdCreatePartitions    cmdType = "create_partitions"
	cmdAlterConfigs        cmdType = "alter_configs"
	cmdAllocateProducerIDs cmdType = "allocate_producer_ids"
	cmdActivateTopic       cmdType = "activate_topic"
	cmdAbortTopic          cmdType = "abort_topic"
)

// commandVersion lets a future format change be recognised by old logs.
const commandVersion = 1

type envelope struct {
	Version int             `json:"v"`
	Type    cmdType         `json:"type"`
	Data    json.RawMessage `json:"data"`
}

type bootstrapCmd struct {
	ClusterID string `json:"clusterId"`
	// MinISR is the bootstrapping controller's min.insync.replicas, the
	// default of topics that set none (0: unknown; logs written before
	// eligible leader replicas existed).
	MinISR int32 `json:"minIsr,omitempty"`
}

// staticDefaultsCmd records the active controller's static
// min.insync.replicas as the default of topics that set none, when it
// differs from the one recorded: an operator who changes it in the
// controllers' server.properties expects it to apply, as in Kafka, where
// the controller resolves it from its own configuration.
type staticDefaultsCmd struct {
	MinISR int32 `json:"minIsr"`
}

// registerBrokerCmd registers b. The state machine decides its epoch and
// fencing; a zero incarnation is a legacy registration (logs written
// before the broker lifecycle existed hold only those).
type registerBrokerCmd struct {
	Broker Broker `json:"broker"`
	// PreviousEpoch is the epoch the broker names as its last
	// registration's (BrokerRegistration's PreviousBrokerEpoch): -1 after
	// a restart in which its logs may have lost unflushed records. nil in
	// logs written before eligible leader replicas existed, which apply
	// as they did then.
	PreviousEpoch *int64 `json:"previousEpoch,omitempty"`
}

type createTopicCmd struct {
	Name        string            `json:"name"`
	ID          [16]byte          `json:"id"`
	Assignments [][]int32         `json:"assignments"` // index = partition
	Configs     map[string]string `json:"configs,omitempty"`
	// Pending creates the topic hidden, to be activated or aborted.
	Pending bool `json:"pending,omitempty"`
	// Limits, when set, are checked again on apply, so that two requests
	// that each fit cannot together exceed them.
	Limits *PartitionLimits `json:"limits,omitempty"`
}

// topicRefCmd names a pending topic to activate or abort, by name and id,
// so that it can never hit a later topic of the same name.
type topicRefCmd struct {
	Name string   `json:"name"`
	ID   [16]byte `json:"id"`
}

// deleteTopicCmd names the topic id too, so a delete racing with a
// delete-and-recreate never removes the newer topic.
type deleteTopicCmd struct {
	Name string   `json:"name"`
	ID   [16]byte `json:"id"`
}

// createPartitionsCmd carries the total the proposer expected, so two
// concurrent requests cannot both append partitions.
type createPartitionsCmd struct {
	Name        string           `json:"name"`
	ID          [16]byte         `json:"id"`
	Total       int32            `json:"total"`
	Assignments [][]int32        `json:"assignments"` // the new partitions only
	Limits      *PartitionLimits `json:"limits,omitempty"`
}

type alterConfigsCmd struct {
	Name       string             `json:"name"`
	ID         [16]byte           `json:"id"`
	Set        map[string]*string `json:"set"` // nil value deletes the override
	ReplaceAll bool               `json:"replaceAll,omitempty"`
}

type allocateProducerIDsCmd struct {
	N int64 `json:"n"`
}

// encodeCommand builds the log entry for payload.
func encodeCommand(t cmdType, payload any) ([]byte, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s command: %w", t, err)
	}
	b, err := json.Marshal(envelope{Version: commandVersion, Type: t, Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode %s envelope: %w", t, err)
	}
	return b, nil
}

// decodeCommand parses a log entry into its type and typed payload. It
// must accept any bytes without panicking: the log is read back from disk.
func decodeCommand(b []byte) (cmdType, any, error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return "", nil, fmt.Errorf("decode command envelope: %w", err)
	}
	if env.Version != commandVersion {
		return "", nil, fmt.Errorf("decode command: unsupported version %d", env.Version)
	}
	var payload any
	switch env.Type {
	case cmdBootstrap:
		payload = &bootstrapCmd{}
	case cmdStaticDefaults:
		payload = &staticDefaultsCmd{}
	case cmdRegisterBroker:
		payload = &registerBrokerCmd{}
	case cmdCreateTopic:
		payload = &createTopicCmd{}
	case cmdDeleteTopic:
		payload = &deleteTopicCmd{}
	case cmdCreatePartitions:
		payload = &createPartitionsCmd{}
	case cmdAlterConfigs:
		payload = &alterConfigsCmd{}
	case cmdAlterBrokerConfigs:
		payload = &alterBrokerConfigsCmd{}
	case cmdAllocateProducerIDs:
		payload = &allocateProducerIDsCmd{}
	case cmdActivateTopic, cmdAbortTopic:
		payload = &topicRefCmd{}
	case cmdReassignPartitions:
		payload = &reassignPartitionsCmd{}
	default:
		if payload = clusterPayload(env.Type); payload == nil {
			payload = opsPayload(env.Type)
		}
		if payload == nil {
			return "", nil, fmt.Errorf("decode command: unknown type %q", env.Type)
		}
	}
	if err := json.Unmarshal(env.Data, payload); err != nil {
		return "", nil, fmt.Errorf("decode %s command: %w", env.Type, err)
	}
	return env.Type, payload, nil
}
