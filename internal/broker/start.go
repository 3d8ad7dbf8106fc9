package broker

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/controller"
	"github.com/weir-project/weir/internal/ctrlclient"
	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/txn"
)

// The pieces of Run's start that need no cleanup of their own: defaults,
// configurations, the metadata store and the links to the controller.

// setDefaults fills in Kafka's defaults for what the configuration left
// unset.
func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ControllerListener == "" {
		o.ControllerListener = "CONTROLLER"
	}
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setDur(&o.HeartbeatInterval, 2*time.Second)
	setDur(&o.SessionTimeout, 9*time.Second)
	setDur(&o.ReplicaLagMax, 30*time.Second)
	setDur(&o.LeaderImbalanceCheck, 300*time.Second)
	if o.InterBrokerListener == "" && len(o.Listeners) > 0 {
		o.InterBrokerListener = o.Listeners[0].Name
	}
}

// raftBinding is the listener Raft's port belongs to and its address: the
// CONTROLLER listener's, shared with the controller's Kafka APIs; on a
// broker-only node, the inter-broker listener's, shared with clients and
// followers.
func (o *Options) raftBinding() (listener, addr string, err error) {
	if !o.BrokerOnly {
		return o.ControllerListener, o.ControllerAddr, nil
	}
	if len(o.Voters) == 0 {
		return "", "", errors.New("a broker-only node (process.roles=broker) needs controller.quorum.voters")
	}
	addr = o.ControllerAddr
	for _, l := range o.Listeners {
		if l.Name == o.InterBrokerListener {
			addr = l.Addr
		}
	}
	return o.InterBrokerListener, addr, nil
}

// serverConfig is what the client and controller servers share; each
// adds its listeners.
func (o *Options) serverConfig(obs server.RequestObserver) server.Config {
	return server.Config{
		MaxRequestBytes:           o.MaxRequestBytes,
		ConnectionsMaxIdle:        o.ConnectionsMaxIdle,
		QueuedMaxRequestBytes:     o.QueuedMaxRequestBytes,
		MaxNonProduceRequestBytes: o.MaxNonProduceRequestBytes,
		TransferTimeout:           o.TransferTimeout,
		TransferMinRate:           o.TransferMinRate,
		CopyFileRegions:           o.CopyFetchRecords,
		APIs:                      apiVersions(),
		Observer:                  obs,
	}
}

// metadataDir is where the Raft log, stable store and snapshots live:
// under metadata.log.dir if set, else under the first log dir, as in
// Kafka. A separate disk keeps metadata writable when data disks fill.
func (o Options) metadataDir() string {
	if o.MetadataLogDir != "" {
		return filepath.Join(o.MetadataLogDir, "__raft")
	}
	return filepath.Join(o.LogDirs[0], "__raft")
}

// openMetadata opens the metadata store. A node that joins (broker-only,
// or a controller not among the voters) starts with no voters and is
// added as a non-voter by the active controller once it registers.
func (b *Broker) openMetadata(clusterID, raftAddr string, join bool) error {
	o := &b.opts
	voters := o.Voters
	if join {
		voters = nil
	}
	meta, err := metadata.Open(metadata.Config{
		NodeID:                   o.NodeID,
		Dir:                      o.metadataDir(),
		RaftAddr:                 raftAddr,
		Stream:                   b.ctrlMux.Raft(),
		Voters:                   voters,
		Join:                     join,
		ClusterID:                clusterID,
		Logger:                   b.log,
		ValidateTopicName:        config.ValidateTopicName,
		ValidateTopicConfig:      config.ValidateTopicConfig,
		ValidateBrokerConfig:     validateBrokerConfig,
		DefaultPartitions:        o.DefaultPartitions,
		DefaultReplicationFactor: o.DefaultReplication,
		Limits: metadata.PartitionLimits{
			MaxBrokerPartitions: o.Config.MaxBrokerPartitions,
			MaxPartitions:       o.Config.MaxPartitions,
		},
		UncleanLeaderElectionEnable: o.Config.UncleanLeaderElectionEnable,
		DefaultMinISR:               o.Config.MinInsyncReplicas,
	})
	if err != nil {
		return fmt.Errorf("open metadata: %w", err)
	}
	b.meta = meta
	return nil
}

// newControllerLinks draws this incarnation's id and builds the
// controller service (on a controller node) and the client every node
// uses to reach the active controller.
func (b *Broker) newControllerLinks(voters map[int32]string) error {
	if _, err := rand.Read(b.incarnation[:]); err != nil {
		return fmt.Errorf("incarnation id: %w", err)
	}
	b.incarnation[0] |= 1 // never zero
	o := &b.opts
	if !o.BrokerOnly {
		b.ctrlSvc = controller.New(controller.Config{
			LocalID:              o.NodeID,
			LocalIncarnation:     b.incarnation,
			Voters:               voters,
			ControllerListener:   o.ControllerListener,
			SessionTimeout:       o.SessionTimeout,
			AutoLeaderRebalance:  o.AutoLeaderRebalance,
			LeaderImbalanceCheck: o.LeaderImbalanceCheck,
			ProducerIDBlock:      txn.DefaultBlockSize,
			Logger:               b.log.With("component", "controller"),
		}, b.meta)
	}
	b.ctrl = ctrlclient.New(ctrlclient.Config{
		NodeID: o.NodeID,
		Voters: voters,
		Leader: func() (int32, bool) {
			id, _, ok := b.meta.Leader()
			return id, ok
		},
		CurrentVoters: b.currentVoters,
		Logger:        b.log.With("component", "ctrlclient"),
	})
	return nil
}

// startedAttrs are the attributes of the "weir started" line: identity,
// epoch and every bound address.
func (b *Broker) startedAttrs(addrs map[string]net.Addr, metricsAddr string) []any {
	attrs := []any{slog.Int("node.id", int(b.opts.NodeID)), slog.String("cluster.id", b.meta.Image().ClusterID()),
		slog.Int64("broker.epoch", b.lifecycle.Epoch())}
	for name, a := range addrs {
		attrs = append(attrs, slog.String("listener."+name, a.String()))
	}
	if metricsAddr != "" {
		attrs = append(attrs, slog.String("metrics", "http://"+metricsAddr))
	}
	return attrs
}
