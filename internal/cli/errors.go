package cli

import (
	"fmt"
	"strings"
)

// withBrokerMessage adds the broker's free-text error message (CreateTopics,
// AlterConfigs and friends carry one) to the Kafka error, which already
// reads "NAME: description". The message often says what exactly was
// wrong, e.g. which config value was invalid.
func withBrokerMessage(err error, msg string) error {
	msg = strings.TrimSpace(msg)
	if err == nil || msg == "" || strings.Contains(err.Error(), msg) {
		return err
	}
	return fmt.Errorf("%w (%s)", err, msg)
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
