package metadata

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"testing"
	"time"
)

// testTimeout bounds every wait in these tests; generous because the
// machine is slow and shared.
const testTimeout = 30 * time.Second

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testConfig is a single-node config with fast Raft timings.
func testConfig(dir string) Config {
	return Config{
		NodeID:             1,
		Dir:                dir,
		RaftAddr:           "127.0.0.1:0",
		Logger:             testLogger(),
		HeartbeatTimeout:   100 * time.Millisecond,
		ElectionTimeout:    100 * time.Millisecond,
		LeaderLeaseTimeout: 50 * time.Millisecond,
	}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// openLeader opens cfg, waits until it leads, and closes it at cleanup.
func openLeader(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := c.WaitLeader(testCtx(t)); err != nil {
		t.Fatalf("WaitLeader: %v", err)
	}
	return c
}

// newTestController is a fresh single-node controller with brokers 1..n
// registered.
func newTestController(t *testing.T, brokers int) *Controller {
	t.Helper()
	c := openLeader(t, testConfig(t.TempDir()))
	for id := int32(1); id <= int32(brokers); id++ {
		if err := c.RegisterBroker(testCtx(t), Broker{ID: id, Host: "127.0.0.1", Port: 9090 + id}); err != nil {
			t.Fatalf("RegisterBroker %d: %v", id, err)
		}
	}
	return c
}

// stateBytes is the image serialised, for whole-state comparisons.
func stateBytes(t *testing.T, im *Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, im); err != nil {
		t.Fatalf("encodeSnapshot: %v", err)
	}
	return buf.Bytes()
}

func strp(s string) *string { return &s }
