package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// usageError is a mistake in how a command was called (an unknown
// command or flag, the wrong arguments), as cobra finds it. It says where
// to read how the command is called: the whole usage text would bury the
// error under its own lines.
type usageError struct {
	err  error
	path string // the command, as typed: "weir topic"
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v (run '%s --help' for usage)", e.err, e.path)
}

func (e *usageError) Unwrap() error { return e.err }

// strictUsage makes every mistake in calling a command under root an
// error of one line with exit status 1. Cobra itself prints the help of a
// command that only groups others and exits 0 whatever follows it, so
// `weir topic cretae foo` would look like success; here such a command
// rejects an unknown subcommand, naming cobra's suggestions. Its help is
// still printed when it is called alone.
func strictUsage(root *cobra.Command) {
	root.SilenceUsage = true // the usage hint of usageError replaces it
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// `weir bench prodcue --topic t`: the flag is unknown to bench
		// only because the subcommand is mistyped; say that.
		if isGroup(c) && len(c.Flags().Args()) > 0 {
			return unknownSubcommand(c, c.Flags().Args())
		}
		return &usageError{err: err, path: c.CommandPath()}
	})
	strictHelp(root)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() && !c.Runnable() {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[groupAnnotation] = "true"
			c.Args = unknownSubcommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
			return
		}
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return &usageError{err: err, path: c.CommandPath()}
				}
				return nil
			}
		}
	}
	walk(root)
}

// strictHelp makes `weir help X` fail for a command X that does not
// exist: cobra's help command prints the root's help and exits 0. The
// rest of cobra's help command (its completion of command names) stays.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, help := range root.Commands() {
		if help.Name() != "help" || help.Run == nil {
			continue
		}
		show := help.Run
		help.Run = nil
		help.RunE = func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return err
			}
			if err := unknownSubcommand(target, rest); err != nil {
				return err
			}
			show(c, args)
			return nil
		}
	}
}

// groupAnnotation marks the commands strictUsage made reject unknown
// subcommands.
const groupAnnotation = "weir/group"

func isGroup(c *cobra.Command) bool { return c.Annotations[groupAnnotation] == "true" }

// unknownSubcommand accepts no arguments for a command that only groups
// subcommands: any argument is a subcommand that does not exist.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which only its own lookup applies
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		err = fmt.Errorf("%w; did you mean %s?", err, quoteAll(s))
	}
	return &usageError{err: err, path: c.CommandPath()}
}

// quoteAll lists names as "a", "b" or "c".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
