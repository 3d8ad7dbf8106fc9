// Package cli implements the client-side commands of the weir binary:
// topic administration, a console producer and consumer, and the
// producer/consumer benchmarks. Everything talks to the cluster through
// franz-go (kgo, kadm) exactly as any other Kafka client would, so these
// commands work against Kafka too.
//
// Every command writes to cmd.OutOrStdout()/cmd.ErrOrStderr() and reads
// cmd.InOrStdin(), and honours the context given to ExecuteContext, so tests
// can drive them without a terminal.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Commands returns the client commands (topic, produce, consume, group,
// config, records, bench) for the root command to add next to serve.
func Commands() []*cobra.Command {
	cmds := []*cobra.Command{
		newTopicCmd(),
		newProduceCmd(),
		newConsumeCmd(),
		newGroupCmd(),
		newConfigCmd(),
		newRecordsCmd(),
		newBenchCmd(),
	}
	addCompletions(cmds)
	return cmds
}

// Defaults shared by every command.
const (
	defaultBootstrap      = "127.0.0.1:9092"
	defaultClientID       = "weir-cli"
	defaultRequestTimeout = 30 * time.Second
	// defaultConnectTimeout bounds the search for a broker that answers:
	// a refused connection fails at once, but a dead host or a port that
	// accepts and never answers would otherwise stall a consumer forever
	// and a producer for the whole delivery timeout.
	defaultConnectTimeout = 5 * time.Second
)

// clientFlags are the connection options every command accepts.
type clientFlags struct {
	bootstrap      string
	clientID       string
	requestTimeout time.Duration
	connectTimeout time.Duration
}

func (c *clientFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.bootstrap, "bootstrap-server", defaultBootstrap,
		"comma-separated host:port list of brokers to bootstrap from")
	fs.StringVar(&c.clientID, "client-id", defaultClientID, "client id sent to the brokers")
	fs.DurationVar(&c.requestTimeout, "request-timeout", defaultRequestTimeout,
		"how long an admin request or a record's delivery may take before failing")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", defaultConnectTimeout,
		"fail if no broker at --bootstrap-server answers within this long")
}

// seeds splits --bootstrap-server into host:port entries.
func (c *clientFlags) seeds() ([]string, error) {
	var out []string
	for _, s := range strings.Split(c.bootstrap, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, ":") {
			return nil, fmt.Errorf("--bootstrap-server %q: want host:port", s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("--bootstrap-server: no broker given")
	}
	return out, nil
}

func (c *clientFlags) validate() error {
	if _, err := c.seeds(); err != nil {
		return err
	}
	if c.requestTimeout <= 0 {
		return fmt.Errorf("--request-timeout %v: must be positive", c.requestTimeout)
	}
	if c.connectTimeout <= 0 {
		return fmt.Errorf("--connect-timeout %v: must be positive", c.connectTimeout)
	}
	return nil
}

// baseOpts are the kgo options common to every client we build. Producing
// commands decide idempotence themselves (on by default, see idempotence).
func (c *clientFlags) baseOpts() ([]kgo.Opt, error) {
	seeds, err := c.seeds()
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(c.clientID),
		kgo.RetryTimeout(c.requestTimeout),
	}, nil
}

// newClient builds a kgo client from the common flags plus extra options
// and makes sure a broker answers it (see reachable).
func (c *clientFlags) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.baseOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	if err := c.reachable(cl); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// runContext is the command's context, additionally cancelled on SIGINT or
// SIGTERM so long-running commands (consume, produce from a terminal, bench)
// stop cleanly and still print their totals. The first signal restores the
// default handling, so a second ^C kills a command stuck in its cleanup.
func runContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// runtimeErrors marks the point where flags have been validated: errors
// after this are about the cluster, not about usage, so cobra must not
// print the usage text with them.
func runtimeErrors(cmd *cobra.Command) {
	cmd.SilenceUsage = true
}
