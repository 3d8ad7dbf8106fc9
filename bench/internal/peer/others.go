package peer

import (
	"fmt"
	"os"
	"regexp"

	"github.com/weir-project/weir/bench/internal/proc"
)

// kfakeReady is printed by this module's cmd/kfake.
var kfakeReady = regexp.MustCompile(`kfake listening on (\S+)`)

// StartKfake starts franz-go's in-memory fake broker (one broker).
func StartKfake(bin string) (*Broker, error) {
	p, m, err := proc.Start("kfake", bin, nil, kfakeReady, startTimeout)
	if err != nil {
		return nil, err
	}
	return &Broker{Name: Kfake, Addrs: []string{m[1]}, Procs: []*proc.Proc{p}}, nil
}

// StartSink starts cmd/kfake -sink: a broker that answers every Produce
// as stored and keeps nothing, against which a producer reaches the
// client's own limit on this machine.
func StartSink(bin string) (*Broker, error) {
	p, m, err := proc.Start("sink", bin, []string{"-sink"}, kfakeReady, startTimeout)
	if err != nil {
		return nil, err
	}
	return &Broker{Name: Sink, Addrs: []string{m[1]}, Procs: []*proc.Proc{p}}, nil
}

// natsListening is nats-server's log line with its client port; it binds
// a random free one with -p -1.
var natsListening = regexp.MustCompile(`Listening for client connections on (\S+)`)

// StartNATS starts nats-server with JetStream on file storage under a
// fresh dir in tmp. Its defaults are kept: a stream's file store is
// fsynced every 2 minutes, as weir by default leaves flushing to the OS.
func StartNATS(bin, tmp string) (*Broker, error) {
	dir, err := os.MkdirTemp(tmp, "nats-")
	if err != nil {
		return nil, fmt.Errorf("nats data dir: %w", err)
	}
	args := []string{"-js", "-sd", dir, "-a", "127.0.0.1", "-p", "-1"}
	p, err := proc.Launch("nats-server", bin, args, natsListening)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m, err := p.WaitReady(startTimeout)
	if err != nil {
		p.Kill()
		os.RemoveAll(dir)
		return nil, err
	}
	return &Broker{Name: JetStream, Addrs: []string{m[1]}, Dir: dir, Procs: []*proc.Proc{p}}, nil
}
