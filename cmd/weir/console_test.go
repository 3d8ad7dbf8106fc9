package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/weir-project/weir/internal/config"
)

// console.listener's port taken: an explicit setting fails the start,
// the no-argument default takes another free loopback port.
func TestListenConsole(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg, _, err := config.New(map[string]string{"console.listener": "http://" + taken.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	if c, err := listenConsole(context.Background(), cfg, false, logger); err == nil || !strings.Contains(err.Error(), "console.listener") {
		c.stop()
		t.Fatalf("a taken console port: %v", err)
	}
	c, err := listenConsole(context.Background(), cfg, true, logger)
	if err != nil {
		t.Fatalf("fallback: %v", err)
	}
	defer c.stop()
	if got := c.ln.Addr().String(); got == taken.Addr().String() || !strings.HasPrefix(got, "127.0.0.1:") {
		t.Fatalf("fallback bound %s", got)
	}
	if c, err := listenConsole(context.Background(), config.Default(), true, logger); c != nil || err != nil {
		t.Fatalf("no console.listener: %v, %v", c, err)
	}
}
