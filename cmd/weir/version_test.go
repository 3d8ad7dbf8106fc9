package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFormatBuildInfo(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name, version string
		bi            *debug.BuildInfo
		want          string
	}{
		{"modified checkout", "dev", bi,
			"weir dev\ncommit: 0123456789abcdef0123456789abcdef01234567+modified\ngo: go1.99.1 " + platform + "\n"},
		{"ldflags version", "1.2.0", bi,
			"weir 1.2.0\ncommit: 0123456789abcdef0123456789abcdef01234567+modified\ngo: go1.99.1 " + platform + "\n"},
		{"go install", "dev", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.3.0"}},
			"weir v1.3.0\ncommit: unknown\ngo: go1.99.1 " + platform + "\n"},
		{"no build info", "dev", nil,
			"weir dev\ncommit: unknown\ngo: " + runtime.Version() + " " + platform + "\n"},
	} {
		if got := formatBuildInfo(tc.version, tc.bi); got != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
