package metadata

import (
	"fmt"
	"slices"
	"strings"
)

const (
	// maxTopicNameLen is Kafka's limit (249, so that "<name>-<partition>"
	// plus a suffix still fits a 255-byte file name).
	maxTopicNameLen = 249
	// maxPartitions bounds one topic so a typo cannot make every broker
	// allocate millions of partition structures.
	maxPartitions = 100_000
	// maxProducerIDBlock bounds one producer id allocation.
	maxProducerIDBlock = 1 << 20
)

// validTopicName applies Kafka's topic name rules. It is the fallback when
// Config.ValidateTopicName is nil and the check the FSM repeats on apply.
// TODO: once internal/config lands, the broker passes
// config.ValidateTopicName; these rules are the same and never change, which
// is what makes them safe to re-check during log replay.
func validTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be %q", ErrInvalidTopic, name)
	case len(name) > maxTopicNameLen:
		return fmt.Errorf("%w: topic name is %d characters, longer than %d", ErrInvalidTopic, len(name), maxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w: topic name %q contains %q; only ASCII letters, digits, '.', '_' and '-' are allowed", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// defaultValidateTopicConfig is used when Config.ValidateTopicConfig is nil:
// it only rejects what can never be a config. TODO: the broker passes
// config.ValidateTopicConfig once internal/config exists.
func defaultValidateTopicConfig(k, v string) error {
	if k == "" {
		return fmt.Errorf("%w: empty config name", ErrInvalidConfig)
	}
	return nil
}

// collisionKey maps a topic name to the key under which Kafka considers two
// names to collide: '.' and '_' are interchangeable in metric names.
func collisionKey(name string) string {
	return strings.ReplaceAll(name, ".", "_")
}

// checkNewTopicName checks name against the existing topics: no topic of the
// same name and none whose name collides with it.
func checkNewTopicName(im *Image, name string) error {
	if im.topics[name] != nil {
		return fmt.Errorf("%w: topic %q already exists", ErrTopicExists, name)
	}
	if !strings.ContainsAny(name, "._") {
		return nil
	}
	key := collisionKey(name)
	for other := range im.topics {
		if collisionKey(other) == key {
			return fmt.Errorf("%w: topic %q collides with existing topic %q ('.' and '_' are interchangeable)", ErrInvalidTopic, name, other)
		}
	}
	return nil
}

// checkAssignments checks replica lists for new partitions: each non-empty,
// of the same length (want, when want > 0), without duplicates, only on
// registered brokers, and with at least one eligible (unfenced, not
// shutting down) replica to lead it, as Kafka requires of a manual
// assignment. firstPartition is used for messages only.
func checkAssignments(im *Image, assignments [][]int32, want int, firstPartition int) error {
	for i, replicas := range assignments {
		p := firstPartition + i
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, p)
		}
		if want == 0 {
			want = len(replicas)
		}
		if len(replicas) != want {
			return fmt.Errorf("%w: partition %d has %d replicas, other partitions have %d", ErrInvalidReplicaAssignment, p, len(replicas), want)
		}
		for j, id := range replicas {
			if _, ok := im.brokers[id]; !ok {
				return fmt.Errorf("%w: partition %d names broker %d, which is not registered", ErrInvalidReplicaAssignment, p, id)
			}
			for _, prev := range replicas[:j] {
				if prev == id {
					return fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidReplicaAssignment, p, id)
				}
			}
		}
		if !slices.ContainsFunc(replicas, im.eligible) {
			return fmt.Errorf("%w: all brokers of partition %d (%v) are fenced or in controlled shutdown", ErrInvalidReplicaAssignment, p, replicas)
		}
	}
	return nil
}

// checkPartitionCount bounds a topic's partition count.
func checkPartitionCount(n int) error {
	if n < 1 {
		return fmt.Errorf("%w: number of partitions must be at least 1, got %d", ErrInvalidPartitions, n)
	}
	if n > maxPartitions {
		return fmt.Errorf("%w: %d partitions is more than the limit of %d per topic", ErrInvalidPartitions, n, maxPartitions)
	}
	return nil
}
