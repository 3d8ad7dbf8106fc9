package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/broker"
	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/console"
)

// defaultConsole is where `weir serve` with no arguments puts the console.
const defaultConsole = "http://127.0.0.1:9645"

// webConsole is the console of one `weir serve`: its port is bound
// before the broker starts (a taken port fails the start, as a taken
// Kafka port does), and it serves once the broker does, through a Kafka
// client on the broker's own client listener.
type webConsole struct {
	ln     net.Listener
	host   string // console.listener's host, as configured
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan error
	client *kgo.Client
	// traffic is the broker's byte counters, for the throughput graph.
	traffic *broker.Traffic
	nodeID  int32
}

// listenConsole binds console.listener, if set. fallback (the
// no-argument default) takes any free loopback port when the usual one
// is taken, rather than failing the start.
func listenConsole(ctx context.Context, cfg *config.Broker, fallback bool, logger *slog.Logger) (*webConsole, error) {
	addr := cfg.ConsoleAddr()
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && fallback {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return nil, fmt.Errorf("console.listener: %w", err)
	}
	host, _, _ := net.SplitHostPort(addr)
	c := &webConsole{ln: ln, host: host, log: logger.With("component", "console")}
	c.ctx, c.cancel = context.WithCancel(ctx)
	// Tests and scripts read the console's address from this line.
	logger.Info("console listening", "url", "http://"+ln.Addr().String()+"/")
	if fallback {
		fmt.Fprintf(os.Stdout, "weir console: http://%s/\n", ln.Addr())
	}
	return c, nil
}

// hook chains the console's start onto the broker's Ready callback, and
// hands the broker the counters the console graphs.
func (c *webConsole) hook(opts *broker.Options) {
	if c == nil {
		return
	}
	c.traffic, c.nodeID = &broker.Traffic{}, opts.NodeID
	opts.Traffic = c.traffic
	listener := opts.Listeners[0].Name
	prev := opts.Ready
	opts.Ready = func(addrs map[string]net.Addr) {
		if prev != nil {
			prev(addrs)
		}
		if err := c.start(addrs[listener]); err != nil {
			c.log.Error("console not started", "err", err)
		}
	}
}

func (c *webConsole) start(kafka net.Addr) error {
	if kafka == nil {
		return errors.New("no client listener address")
	}
	host, port, err := net.SplitHostPort(kafka.String())
	if err != nil {
		return fmt.Errorf("client listener %s: %w", kafka, err)
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1" // bound to every interface: loopback is one
	}
	seed := net.JoinHostPort(host, port)
	// kgo answers Metadata from a cache younger than MetadataMinAge
	// (5 s by default): a page shown after a change should show it.
	c.client, err = kgo.NewClient(kgo.SeedBrokers(seed), kgo.ClientID("weir-console"), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("console client: %w", err)
	}
	srv, err := console.New(console.Config{Client: c.client, Seeds: []string{seed}, Logger: c.log, ListenHost: c.host,
		NodeID: c.nodeID, Traffic: c.traffic.Totals})
	if err != nil {
		c.client.Close()
		c.client = nil
		return err
	}
	c.done = make(chan error, 1)
	go func() { c.done <- srv.Serve(c.ctx, c.ln) }()
	return nil
}

// stop ends the console (its requests in flight get a few seconds) and
// closes its client; the broker stops at the same signal.
func (c *webConsole) stop() {
	if c == nil {
		return
	}
	c.cancel()
	if c.done != nil {
		if err := <-c.done; err != nil {
			c.log.Warn("console stopped", "err", err)
		}
	} else {
		c.ln.Close()
	}
	if c.client != nil {
		c.client.Close()
	}
}
