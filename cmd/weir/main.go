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
		Version:       buildInfo(),
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}")
	root.AddCommand(serveCommand())
	root.AddCommand(clusterCommand())
	root.AddCommand(verifyCommand())
	root.AddCommand(versionCommand())
	root.AddCommand(cli.Commands()...)
	// Cobra adds its completion command only when it runs; add it now so
	// that strictUsage covers it too.
	root.InitDefaultCompletionCmd()
	strictUsage(root)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "weir:", cli.ErrorLine(err))
		os.Exit(1)
	}
}
