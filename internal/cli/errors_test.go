package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The broker's message replaces the generic description of a bare Kafka
// error, and errors.Is still finds the code.
func TestWithBrokerMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		msg  string
		want string
	}{
		{kerr.InvalidConfig, `invalid value "x" for cleanup.policy`, `INVALID_CONFIG: invalid value "x" for cleanup.policy`},
		{kerr.InvalidConfig, "  ", kerr.InvalidConfig.Error()},
		{kerr.InvalidConfig, "Configuration is invalid.", kerr.InvalidConfig.Error()},
		{fmt.Errorf("wrapped: %w", kerr.InvalidConfig), "why", "wrapped: " + kerr.InvalidConfig.Error() + " (why)"},
	} {
		got := withBrokerMessage(tc.err, tc.msg)
		if got.Error() != tc.want || !errors.Is(got, kerr.InvalidConfig) {
			t.Errorf("withBrokerMessage(%v, %q) = %q, want %q wrapping INVALID_CONFIG", tc.err, tc.msg, got, tc.want)
		}
	}
	if withBrokerMessage(nil, "x") != nil {
		t.Error("nil error with a message is not nil")
	}
}

// kadm's shard-error wrapper is replaced by the failures it holds, each
// distinct one once; newlines become "; ".
func TestErrorLine(t *testing.T) {
	dial := errors.New("unable to dial: dial tcp 127.0.0.1:1: connect: connection refused")
	shards := &kadm.ShardErrors{Name: "ListGroups", AllFailed: true, Errs: []kadm.ShardError{{Err: dial}, {Err: dial}}}
	err := fmt.Errorf("list groups: %w", shards)
	if got, want := ErrorLine(err), "list groups: "+dial.Error(); got != want {
		t.Errorf("ErrorLine = %q, want %q", got, want)
	}
	shards.Errs = append(shards.Errs, kadm.ShardError{Err: kerr.CoordinatorNotAvailable})
	err = fmt.Errorf("list groups: %w", shards)
	if got, want := ErrorLine(err), "list groups: "+dial.Error()+"; "+kerr.CoordinatorNotAvailable.Error(); got != want {
		t.Errorf("ErrorLine = %q, want %q", got, want)
	}
	if got := ErrorLine(errors.Join(errors.New("group a: x"), errors.New("group b: y"))); got != "group a: x; group b: y" {
		t.Errorf("joined errors: %q", got)
	}
	got := ErrorLine(fmt.Errorf("list topics: %w", context.DeadlineExceeded))
	if want := "list topics: context deadline exceeded (no answer from the broker within --request-timeout: is it running at --bootstrap-server?)"; got != want {
		t.Errorf("deadline: %q", got)
	}
}

func TestPartitionRange(t *testing.T) {
	for n, want := range map[int32]string{0: "no partitions", 1: "1 partition (0)", 2: "2 partitions (0-1)"} {
		if got := partitionRange(n); got != want {
			t.Errorf("partitionRange(%d) = %q, want %q", n, got, want)
		}
	}
}
