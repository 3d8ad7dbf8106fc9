package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Shell completion: cobra completes subcommands and flags by itself
// (`weir completion bash|zsh|fish|powershell`); here topic and group
// names are completed too, by asking the cluster at --bootstrap-server.
// A cluster that does not answer within completionTimeout completes
// nothing rather than hanging the shell.

const completionTimeout = 2 * time.Second

// Commands whose arguments are topic names, and those whose arguments are
// group names, by command path. Every --topic and --group flag completes
// the same way.
var (
	topicArgCommands = map[string]bool{
		"topic describe": true, "topic delete": true, "topic alter-config": true, "topic alter": true,
		"topic offsets": true, "records delete": true, "produce": true, "consume": true,
	}
	groupArgCommands = map[string]bool{
		"group describe": true, "group reset-offsets": true, "group delete-offsets": true, "group delete": true,
	}
)

// addCompletions walks the command trees and attaches name completion.
func addCompletions(cmds []*cobra.Command) {
	for _, c := range cmds {
		walkCommands(c, func(c *cobra.Command) {
			path := c.CommandPath()
			switch {
			case c.ValidArgsFunction != nil:
			case topicArgCommands[path]:
				c.ValidArgsFunction = completeArgs(topicNames)
			case groupArgCommands[path]:
				c.ValidArgsFunction = completeArgs(groupNames)
			}
			if c.Flags().Lookup("topic") != nil {
				_ = c.RegisterFlagCompletionFunc("topic", completeFlag(topicNames))
			}
			if c.Flags().Lookup("group") != nil {
				_ = c.RegisterFlagCompletionFunc("group", completeFlag(groupNames))
			}
		})
	}
}

func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, fn)
	}
}

type nameLister func(context.Context, *kadm.Client) ([]string, error)

func topicNames(ctx context.Context, adm *kadm.Client) ([]string, error) {
	ts, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, err
	}
	return ts.Names(), nil
}

func groupNames(ctx context.Context, adm *kadm.Client) ([]string, error) {
	return listGroupNames(ctx, adm)
}

// completeArgs completes positional arguments while the command takes
// more of them.
func completeArgs(list nameLister) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if cmd.ValidateArgs(append(args, toComplete)) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeNames(cmd, list, toComplete, args)
	}
}

func completeFlag(list nameLister) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeNames(cmd, list, toComplete, nil)
	}
}

// completeNames asks the cluster for the names starting with prefix,
// leaving out those already given.
func completeNames(cmd *cobra.Command, list nameLister, prefix string, given []string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cf := clientFlags{bootstrap: defaultBootstrap, clientID: defaultClientID, requestTimeout: completionTimeout, connectTimeout: completionTimeout}
	if f := cmd.Flag("bootstrap-server"); f != nil {
		cf.bootstrap = f.Value.String()
	}
	cl, err := cf.newClient()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	names, err := list(ctx, kadm.NewClient(cl))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !slices.Contains(given, n) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
