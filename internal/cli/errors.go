package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// codeError is a Kafka error code with the message that says what exactly
// was wrong this time. It reads "NAME: message", in place of kerr's
// generic description of the code, and unwraps to the *kerr.Error so
// errors.Is(err, kerr.X) still works.
type codeError struct {
	code *kerr.Error
	msg  string
}

func (e *codeError) Error() string { return e.code.Message + ": " + e.msg }
func (e *codeError) Unwrap() error { return e.code }

// kafkaError is code explained by msg.
func kafkaError(code *kerr.Error, msg string) error { return &codeError{code: code, msg: msg} }

// withBrokerMessage adds the broker's free-text error message (CreateTopics,
// AlterConfigs and friends carry one) to the Kafka error. The message says
// what exactly was wrong, e.g. which config value was invalid, so for a
// bare Kafka error it replaces the code's generic description: one line
// with the code's name and the broker's words, once.
func withBrokerMessage(err error, msg string) error {
	msg = strings.TrimSpace(msg)
	if err == nil || msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	if ke, ok := err.(*kerr.Error); ok {
		return kafkaError(ke, msg)
	}
	return fmt.Errorf("%w (%s)", err, msg)
}

// ErrorLine is how a command's error is shown: one line (several failures
// are joined with "; "), with the pieces kadm adds around a request's
// failed shards replaced by the failures themselves, and a hint where a
// bare timeout would not say what to check.
func ErrorLine(err error) string {
	msg := err.Error()
	var shards *kadm.ShardErrors
	if errors.As(err, &shards) {
		msg = strings.Replace(msg, shards.Error(), shardCauses(shards), 1)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		msg += " (no answer from the broker within --request-timeout: is it running at --bootstrap-server?)"
	}
	return strings.ReplaceAll(strings.TrimSpace(msg), "\n", "; ")
}

// shardCauses is what failed in a request kadm sent in pieces: each
// distinct failure once, instead of "request X has N separate shard
// errors, first: ...".
func shardCauses(se *kadm.ShardErrors) string {
	var causes []string
	seen := map[string]bool{}
	for _, s := range se.Errs {
		c := s.Err.Error()
		if !seen[c] {
			seen[c] = true
			causes = append(causes, c)
		}
	}
	return strings.Join(causes, "; ")
}

// joinedError holds several failures on one line: the CLI reports errors
// as a single readable line, and errors.Join would use newlines. It unwraps
// to all of them, so errors.Is/As still work.
type joinedError []error

func (j joinedError) Error() string {
	parts := make([]string, len(j))
	for i, e := range j {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (j joinedError) Unwrap() []error { return j }

// joinLine combines the non-nil errors into one error, or nil.
func joinLine(errs []error) error {
	var kept []error
	for _, e := range errs {
		if e != nil {
			kept = append(kept, e)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return joinedError(kept)
}
