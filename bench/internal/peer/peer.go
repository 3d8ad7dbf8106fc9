package peer

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/weir-project/weir/bench/internal/proc"
)

// Names of the peers as the report prints them.
const (
	Weir        = "weir"
	WeirCluster = "weir 3-node"
	Kfake       = "kfake"
	JetStream   = "JetStream"
	Sink        = "sink"
)

// startTimeout bounds a start on a loaded 2-core machine (10,000
// partitions take a while).
const startTimeout = 3 * time.Minute

// stopTimeout is how long a broker gets to exit on SIGTERM before it is
// killed.
const stopTimeout = 30 * time.Second

// Broker is one running peer: one process, or several for a cluster.
type Broker struct {
	Name  string
	Addrs []string // client addresses (Kafka bootstrap, or NATS URL host:port)
	Dir   string   // its data dir, removed by Stop ("" for none)
	Procs []*proc.Proc
	// Metrics is the broker's Prometheus page, when it was started with
	// one (weir in the latency case); "" for none.
	Metrics string
}

// PIDs are the processes whose CPU counts for this broker.
func (b *Broker) PIDs() []int {
	var pids []int
	for _, p := range b.Procs {
		pids = append(pids, p.PID())
	}
	return pids
}

// CPU is the broker's CPU time so far, all its processes together.
func (b *Broker) CPU() (time.Duration, error) { return proc.CPUSum(b.PIDs()) }

// Stop ends every process by its PID (SIGTERM, then SIGKILL after
// stopTimeout) and removes the data dir. A cluster's nodes are signalled
// together, as `weir cluster up` stops them: the last node stopped alone
// would wait for a quorum that is gone.
func (b *Broker) Stop() error {
	errs := make([]error, len(b.Procs))
	var wg sync.WaitGroup
	for i, p := range b.Procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop(stopTimeout)
		}()
	}
	wg.Wait()
	if b.Dir != "" {
		if err := os.RemoveAll(b.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s data: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}
