// Command weir is a Kafka-compatible broker, controller and command-line
// client in one binary.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/weir-project/weir/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "weir",
		Short:         "weir: a Kafka-compatible distributed commit log",
		Long:          "weir is a Kafka-compatible broker, controller and command-line client in one binary.\nAny Kafka client can produce to and consume from it.",
		SilenceErrors: true,
	}
	root.AddCommand(serveCommand())
	root.AddCommand(clusterCommand())
	root.AddCommand(verifyCommand())
	root.AddCommand(cli.Commands()...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			// A bare "context deadline exceeded" does not say what to check.
			msg += " (no answer from the broker within --request-timeout: is it running at --bootstrap-server?)"
		}
		fmt.Fprintln(os.Stderr, "weir:", msg)
		os.Exit(1)
	}
}
