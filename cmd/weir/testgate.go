package main

import (
	"fmt"
	"log/slog"
	"os"
)

// rollFlushGateEnv names a FIFO that holds every background flush of
// rolled segments until a writer opens it: a black-box test
// (test/faults) kills the broker while a roll's fsyncs are certain not to
// have run. Not a configuration key: it exists for tests only and is
// read nowhere else.
const rollFlushGateEnv = "WEIR_TEST_ROLL_FLUSH_GATE"

// rollFlushGate returns the storage hook for rollFlushGateEnv, or nil
// when it is unset.
func rollFlushGate(logger *slog.Logger) func(dir string, target int64) error {
	fifo := os.Getenv(rollFlushGateEnv)
	if fifo == "" {
		return nil
	}
	logger.Warn("roll flushes wait for a writer of "+rollFlushGateEnv+" (tests only)", "fifo", fifo)
	return func(dir string, target int64) error {
		logger.Warn("roll flush held by "+rollFlushGateEnv, "log", dir, "below_offset", target)
		f, err := os.OpenFile(fifo, os.O_RDONLY, 0) // blocks until a writer opens it
		if err != nil {
			return fmt.Errorf("%s: %w", rollFlushGateEnv, err)
		}
		return f.Close()
	}
}
