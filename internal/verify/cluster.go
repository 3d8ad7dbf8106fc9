package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/internal/localcluster"
	"github.com/weir-project/weir/internal/tmpfs"
)

// env is the cluster under test: a local one this run started (lc set),
// or brokers it attached to.
type env struct {
	lc        *localcluster.Cluster
	nw        *localcluster.Network
	bootstrap []string
	obs       *observer
	ids       []int32

	disk     *tmpfs.Disk // the disk-full node's log dir, if any
	diskNode int32
	dataDir  string
	tempData bool
	nodeLog  *os.File
}

// clusterOverrides are the settings of a local cluster under test: fast
// failure detection, so that a fault of a few seconds is one the
// cluster notices and recovers from within its window.
func clusterOverrides(unsafe bool) []string {
	o := []string{
		"broker.heartbeat.interval.ms=500",
		"broker.session.timeout.ms=3000",
		"replica.fetch.backoff.ms=200",
		"offsets.topic.num.partitions=3",
		"offsets.topic.replication.factor=3",
		"group.initial.rebalance.delay.ms=0",
		// KIP-848 members at the classic ones' pace (their client sets
		// 500 ms and 6 s): at the defaults (5 s, 45 s) a member that
		// left while its coordinator was cut off held its partitions
		// for 45 s, and the group hardly read under --group-churn.
		"group.consumer.heartbeat.interval.ms=500",
		"group.consumer.session.timeout.ms=6000",
		"auto.create.topics.enable=false",
		"controlled.shutdown.timeout.ms=10000",
	}
	if unsafe {
		// Followers never leave the ISR by lagging: see loseFault.
		return append(o, "min.insync.replicas=1", "unclean.leader.election.enable=true", "replica.lag.time.max.ms=600000")
	}
	return append(o, "min.insync.replicas=2", "replica.lag.time.max.ms=4000")
}

// startLocal starts a proxied local cluster, one node's log dir on a
// small tmpfs when the disk-full fault is asked for (and can be had).
func startLocal(ctx context.Context, o Options, logf func(string, ...any)) (_ *env, skipped []string, err error) {
	e := &env{dataDir: o.DataDir}
	if e.dataDir == "" {
		for _, d := range cleanStale() {
			logf("removed %s, left by a run that died", d)
		}
		if e.dataDir, err = os.MkdirTemp("", "weir-verify-data"); err != nil {
			return nil, nil, fmt.Errorf("data dir: %w", err)
		}
		e.tempData = true
		if err := claim(e.dataDir); err != nil {
			os.RemoveAll(e.dataDir)
			return nil, nil, fmt.Errorf("data dir: %w", err)
		}
	}
	defer func() {
		if err != nil {
			e.stop(logf)
		}
	}()
	if e.nodeLog, err = os.Create(filepath.Join(o.Dir, "nodes.log")); err != nil {
		return nil, nil, fmt.Errorf("node log: %w", err)
	}
	lc, err := localcluster.New(localcluster.Config{
		Nodes: o.Nodes, Dir: e.dataDir, Binary: o.Binary, Proxied: true,
		Overrides: clusterOverrides(o.Unsafe), Output: e.nodeLog, Logger: o.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	e.lc, e.nw = lc, lc.Network()
	if slices.Contains(o.Faults, FaultDiskFull) {
		// The last node's data on a disk of its own; Raft's log stays on
		// the big disk, so the metadata quorum is never what fills up.
		n := lc.Nodes[len(lc.Nodes)-1]
		mount := filepath.Join(n.Dir, "disk")
		if e.disk, err = tmpfs.Mount(mount, diskMiB); err != nil {
			logf("disk-full fault skipped: %v", err)
			skipped = append(skipped, FaultDiskFull+": "+err.Error())
			err = nil
		} else {
			e.diskNode = n.ID
			n.Overrides = append(n.Overrides, "log.dirs="+filepath.Join(mount, "logs"), "metadata.log.dir="+filepath.Join(n.Dir, "meta"))
		}
	}
	addrs := map[int32]string{}
	for _, n := range lc.Nodes {
		e.bootstrap = append(e.bootstrap, n.ClientAddr)
		e.ids = append(e.ids, n.ID)
		addrs[n.ID] = n.ClientAddr
	}
	e.obs = newObserver(addrs, e.nw.Direct)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := lc.Start(sctx); err != nil {
		return nil, nil, fmt.Errorf("start the cluster (node logs in %s): %w", e.nodeLog.Name(), err)
	}
	return e, skipped, nil
}

// attach uses running brokers; the observer learns their ids.
func attach(ctx context.Context, brokers []string) (*env, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("attach to %s: %w", strings.Join(brokers, ","), err)
	}
	e := &env{bootstrap: brokers}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		e.ids = append(e.ids, b.NodeID)
		addrs[b.NodeID] = b.Host + ":" + strconv.Itoa(int(b.Port))
	}
	e.obs = newObserver(addrs, func(s string) string { return s })
	return e, nil
}

// node is the local node id (nil when attached).
func (e *env) node(id int32) *localcluster.Node {
	if e.lc == nil || id < 1 || int(id) > len(e.lc.Nodes) {
		return nil
	}
	return e.lc.Node(id)
}

// stop stops the cluster cleanly, frees the tmpfs and the temp data.
func (e *env) stop(logf func(string, ...any)) {
	if e.obs != nil {
		e.obs.close()
	}
	if e.lc != nil {
		if e.nw != nil {
			e.nw.Heal()
		}
		for _, n := range e.lc.Nodes {
			if n.Running() {
				n.Resume() // a paused node cannot shut down
			}
		}
		e.lc.Stop(30 * time.Second)
		e.lc.Close()
	}
	if e.disk != nil {
		if err := e.disk.Unmount(); err != nil {
			logf("%v", err)
		}
	}
	if e.nodeLog != nil {
		e.nodeLog.Close()
	}
	if e.tempData {
		os.RemoveAll(e.dataDir)
	}
}

// segmentBytes is the workload topics' segment.bytes.
const segmentBytes = 64 << 10

// createTopics creates the workload's topics (RF 3 or the cluster's size)
// and waits until each partition has a leader.
func createTopics(ctx context.Context, adm *kadm.Client, topics []TopicInfo, rf int16, minISR int) error {
	for _, t := range topics {
		cfg := map[string]*string{
			"min.insync.replicas": kadm.StringPtr(strconv.Itoa(minISR)),
			// Small segments roll every half minute or so at the default
			// rate: torn writes meet fresh segments, and a power loss
			// finds several above the checkpointed recovery point.
			"segment.bytes": kadm.StringPtr(strconv.Itoa(segmentBytes)),
		}
		if minISR == 1 {
			cfg["unclean.leader.election.enable"] = kadm.StringPtr("true")
		}
		resp, err := adm.CreateTopic(ctx, t.Partitions, rf, cfg, t.Name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t.Name, err)
		}
	}
	return nil
}
