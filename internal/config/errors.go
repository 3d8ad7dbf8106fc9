package config

import (
	"errors"
	"fmt"
)

// Sentinel errors. Detailed errors wrap them so callers can map them to
// Kafka error codes with errors.Is (both become INVALID_CONFIG, except an
// unknown topic key, which Kafka also reports as INVALID_CONFIG but with a
// different message).
var (
	// ErrUnknownConfig: the key is not a configuration weir knows.
	ErrUnknownConfig = errors.New("unknown configuration")
	// ErrInvalidConfig: the key is known but its value is not acceptable.
	ErrInvalidConfig = errors.New("invalid configuration")
)

// ValueError reports a value refused for a key, and why. It wraps
// ErrInvalidConfig.
type ValueError struct {
	Key    string
	Value  string
	Reason string
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("invalid value %q for %s: %s", e.Value, e.Key, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ValueError) Unwrap() error { return ErrInvalidConfig }

func invalid(key, value, format string, args ...any) error {
	return &ValueError{Key: key, Value: value, Reason: fmt.Sprintf(format, args...)}
}

func unknownKey(key string) error {
	return fmt.Errorf("%w %q", ErrUnknownConfig, key)
}
