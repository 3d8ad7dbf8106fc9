package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidTopicName is wrapped by every ValidateTopicName error; the
// broker answers INVALID_TOPIC_EXCEPTION.
var ErrInvalidTopicName = errors.New("invalid topic name")

// MaxTopicNameLength is Kafka's limit: 255 minus room for a partition
// suffix and the ".deleted" marker in directory names.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules: not empty, not "." or "..", at
// most 249 characters, only ASCII letters, digits, '.', '_' and '-'.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopicName, name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: %d characters, at most %d allowed", ErrInvalidTopicName, len(name), MaxTopicNameLength)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; only ASCII letters, digits, '.', '_' and '-' are allowed", ErrInvalidTopicName, name, c)
		}
	}
	return nil
}

// TopicCollisionKey is the name with '.' replaced by '_'. Kafka refuses to
// create a topic whose key equals an existing topic's ("a.b" vs "a_b"),
// since the two would share metric names.
func TopicCollisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }
