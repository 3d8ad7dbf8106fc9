// Package peer builds and starts the brokers the suite compares: weir
// (one node or a local cluster), franz-go's in-memory kfake, and NATS
// JetStream with file storage. Each runs as its own process on loopback
// with its own temp dir, so its CPU time is its own.
package peer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Binaries are the built programs of the peers.
type Binaries struct {
	Weir, Kfake, NATS string
}

// Build compiles the peers into dir: weir from the checkout at weirSrc
// (as shipped: no -race), the kfake main of this module, and nats-server
// from its Go module (the version in this module's go.mod). benchDir is
// this module's root.
func Build(ctx context.Context, weirSrc, benchDir, dir string) (Binaries, error) {
	b := Binaries{
		Weir:  filepath.Join(dir, "weir"),
		Kfake: filepath.Join(dir, "kfake"),
		NATS:  filepath.Join(dir, "nats-server"),
	}
	steps := []struct {
		dir, out, pkg string
	}{
		{weirSrc, b.Weir, "./cmd/weir"},
		{benchDir, b.Kfake, "./cmd/kfake"},
		{benchDir, b.NATS, "github.com/nats-io/nats-server/v2"},
	}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", s.out, s.pkg)
		cmd.Dir = s.dir
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return Binaries{}, fmt.Errorf("build %s in %s: %w", s.pkg, s.dir, err)
		}
	}
	return b, nil
}
