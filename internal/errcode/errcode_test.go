package errcode

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/storage"
)

// The message of an error in the request is its detail, without the
// operation the client already named; other errors are sent whole.
func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // "<nil>": no message
		code *kerr.Error
	}{
		{fmt.Errorf("create topic %q: %w", "foo", fmt.Errorf("%w: invalid value %q for cleanup.policy", metadata.ErrInvalidConfig, "bogus")),
			`invalid value "bogus" for cleanup.policy`, kerr.InvalidConfig},
		{fmt.Errorf("%w: topic %q already exists", metadata.ErrTopicExists, "t"), `topic "t" already exists`, kerr.TopicAlreadyExists},
		{fmt.Errorf("create topic %q: %w", "t", metadata.ErrTopicExists), "<nil>", kerr.TopicAlreadyExists},
		// A forwarded answer: the controller's code and message.
		{fmt.Errorf("create topic %q: %w: %s", "y", kerr.InvalidReplicationFactor, "replication factor 3 larger than 1 available brokers"),
			"replication factor 3 larger than 1 available brokers", kerr.InvalidReplicationFactor},
		{fmt.Errorf("append to /data/t-3: %w: %w", storage.ErrStorage, fmt.Errorf("no space left on device")),
			"append to /data/t-3: storage error: no space left on device", kerr.KafkaStorageError},
		{fmt.Errorf("something odd"), "something odd", kerr.UnknownServerError},
	} {
		got := "<nil>"
		if m := Message(tc.err); m != nil {
			got = *m
		}
		if got != tc.want {
			t.Errorf("Message(%q) = %q, want %q", tc.err, got, tc.want)
		}
		if c := Code(tc.err); c != tc.code.Code {
			t.Errorf("Code(%q) = %d, want %d", tc.err, c, tc.code.Code)
		}
	}
	if Message(nil) != nil || Code(nil) != 0 {
		t.Error("nil error has a message or a code")
	}
}

// Names are Kafka's Errors names; codes Kafka does not define read as
// UNKNOWN_SERVER_ERROR, so the set of names stays bounded.
func TestName(t *testing.T) {
	for code, want := range map[int16]string{
		0:     "NONE",
		-1:    "UNKNOWN_SERVER_ERROR",
		3:     "UNKNOWN_TOPIC_OR_PARTITION",
		36:    "TOPIC_ALREADY_EXISTS",
		6:     "NOT_LEADER_OR_FOLLOWER",
		9999:  "UNKNOWN_SERVER_ERROR",
		-2000: "UNKNOWN_SERVER_ERROR",
	} {
		if got := Name(code); got != want {
			t.Errorf("Name(%d) = %q, want %q", code, got, want)
		}
	}
}
