package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release this binary is, set at build time:
//
//	go build -ldflags "-X main.version=1.2.0" ./cmd/weir
//
// Left at "dev", a binary installed with `go install ...@vX` reports the
// module version go recorded instead.
var version = "dev"

// buildInfo is what `weir version` and `weir --version` print.
func buildInfo() string {
	bi, _ := debug.ReadBuildInfo()
	return formatBuildInfo(version, bi)
}

// formatBuildInfo says which release (v), which commit (go records it when
// it builds in a git checkout; "+modified" if the tree had uncommitted
// changes) and which Go toolchain and platform. bi may be nil.
func formatBuildInfo(v string, bi *debug.BuildInfo) string {
	commit, goVersion := "unknown", runtime.Version()
	if bi != nil {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		goVersion = bi.GoVersion
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit != "unknown" {
			commit += "+modified"
		}
	}
	return fmt.Sprintf("weir %s\ncommit: %s\ngo: %s %s/%s\n", v, commit, goVersion, runtime.GOOS, runtime.GOARCH)
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildInfo())
			return err
		},
	}
}
