// Package broker serves Kafka's APIs on top of the metadata controller,
// the replica manager and the storage engine. One file per API family;
// this one owns the broker's lifecycle and the reconciliation of local
// replicas with the cluster metadata.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/storage"
	"github.com/weir-project/weir/internal/txn"
)

// Listener is a client listener to bind, with what to advertise for it.
type Listener struct {
	Name           string
	Addr           string // host:port to bind; port 0 picks one
	AdvertisedHost string // "" = the bound host
	AdvertisedPort int    // 0 = the bound port
}

// Options is everything the broker needs, derived from the configuration.
type Options struct {
	NodeID             int32
	Rack               string
	LogDirs            []string
	MetadataLogDir     string     // metadata.log.dir: Raft's home; "" = the first log dir
	Listeners          []Listener // client listeners; the first is advertised in Metadata
	ControllerAddr     string     // raft transport bind address
	Voters             map[int32]string
	MaxRequestBytes    int32
	ConnectionsMaxIdle time.Duration
	// Network limits against hostile clients (see server.Config).
	QueuedMaxRequestBytes     int64 // <= 0: unbounded
	MaxNonProduceRequestBytes int32
	TransferTimeout           time.Duration // <= 0: none
	TransferMinRate           int64         // bytes per second
	ConnLimits                *server.ConnLimits
	AutoCreateTopics          bool
	DefaultPartitions         int32
	DefaultReplication        int16
	Storage                   storage.ManagerConfig
	// Config is the parsed broker configuration: topic defaults and the
	// DescribeConfigs listing come from it.
	Config *config.Broker
	Logger *slog.Logger
	// Ready, if set, is called once the broker serves, with the bound
	// address of each listener by name.
	Ready func(addrs map[string]net.Addr)
}

// Broker is one running broker.
type Broker struct {
	opts     Options
	nodeID   int32
	log      *slog.Logger
	logs     *storage.Manager
	replicas *replica.Manager
	meta     *metadata.Controller
	srv      *server.Server
	// producerIDs hands out idempotent producer ids (InitProducerId).
	producerIDs *txn.ProducerIDs
	// groups is the consumer group coordinator (groups.go).
	groups *group.Coordinator

	reconcileMu sync.Mutex
	lastImage   *metadata.Image
	unknownLogs map[storage.TopicPartition]bool // warned about once
}

// Run starts the broker and serves until ctx is cancelled, then shuts
// down cleanly: listeners closed, checkpoints and the clean-shutdown
// marker written, metadata store closed.
func Run(ctx context.Context, opts Options) (err error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	b := &Broker{opts: opts, nodeID: opts.NodeID, log: logger, unknownLogs: map[storage.TopicPartition]bool{}}
	for _, dir := range opts.LogDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create log dir: %w", err)
		}
	}

	storedClusterID, err := readMetaProperties(opts.LogDirs, opts.NodeID)
	if err != nil {
		return err
	}

	var listeners []server.Listener
	for _, l := range opts.Listeners {
		listeners = append(listeners, server.Listener{Name: l.Name, Addr: l.Addr})
	}
	b.srv, err = server.New(server.Config{
		Listeners:                 listeners,
		MaxRequestBytes:           opts.MaxRequestBytes,
		ConnectionsMaxIdle:        opts.ConnectionsMaxIdle,
		QueuedMaxRequestBytes:     opts.QueuedMaxRequestBytes,
		MaxNonProduceRequestBytes: opts.MaxNonProduceRequestBytes,
		TransferTimeout:           opts.TransferTimeout,
		TransferMinRate:           opts.TransferMinRate,
		Limits:                    opts.ConnLimits,
		APIs:                      apiVersions(),
	}, b, logger.With("component", "server"))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer func() { err = errors.Join(err, b.srv.Close()) }()

	b.logs, err = storage.OpenManager(opts.Storage, logger.With("component", "storage"))
	if err != nil {
		return fmt.Errorf("open logs: %w", err)
	}
	defer func() { err = errors.Join(err, b.logs.Close()) }()
	b.replicas = replica.NewManager(b.logs, opts.NodeID)
	b.replicas.SetLogger(logger.With("component", "replica"))
	b.groups = b.newGroupCoordinator()
	defer b.groups.Close()

	b.meta, err = metadata.Open(metadata.Config{
		NodeID:                   opts.NodeID,
		Dir:                      opts.metadataDir(),
		RaftAddr:                 opts.ControllerAddr,
		Voters:                   opts.Voters,
		ClusterID:                storedClusterID,
		Logger:                   logger.With("component", "metadata"),
		ValidateTopicName:        config.ValidateTopicName,
		ValidateTopicConfig:      config.ValidateTopicConfig,
		DefaultPartitions:        opts.DefaultPartitions,
		DefaultReplicationFactor: opts.DefaultReplication,
		Limits: metadata.PartitionLimits{
			MaxBrokerPartitions: opts.Config.MaxBrokerPartitions,
			MaxPartitions:       opts.Config.MaxPartitions,
		},
	})
	if err != nil {
		return fmt.Errorf("open metadata: %w", err)
	}
	defer func() { err = errors.Join(err, b.meta.Close()) }()
	b.producerIDs = txn.NewProducerIDs(b.meta, txn.DefaultBlockSize)

	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := b.meta.WaitLeader(startCtx); err != nil {
		return fmt.Errorf("wait for metadata leader: %w", err)
	}
	if err := b.register(startCtx); err != nil {
		return err
	}
	if cid := b.meta.Image().ClusterID(); storedClusterID != "" && cid != storedClusterID {
		return fmt.Errorf("log dirs belong to cluster %s but the metadata store holds cluster %s", storedClusterID, cid)
	}
	if err := writeMetaProperties(opts.LogDirs, opts.NodeID, b.meta.Image().ClusterID()); err != nil {
		return err
	}
	// Partitions that cannot be opened yet do not stop the broker: the
	// others serve, and watchMetadata retries these.
	b.reconcile()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); b.logs.Run(runCtx) }()
	go func() { defer wg.Done(); b.watchMetadata(runCtx) }()
	go func() { defer wg.Done(); b.expireProducers(runCtx) }()
	go func() { defer wg.Done(); b.watchGroupPartitions(runCtx) }()

	addrs := map[string]net.Addr{}
	for _, l := range opts.Listeners {
		addrs[l.Name] = b.srv.Addr(l.Name)
	}
	addrs["CONTROLLER"] = addrFromString(b.meta.RaftAddr())
	attrs := []any{slog.Int("node.id", int(opts.NodeID)), slog.String("cluster.id", b.meta.Image().ClusterID())}
	for name, a := range addrs {
		attrs = append(attrs, slog.String("listener."+name, a.String()))
	}
	// Tests and scripts read the bound addresses from this line.
	logger.Info("weir started", attrs...)
	if opts.Ready != nil {
		opts.Ready(addrs)
	}
	serveErr := b.srv.Serve(runCtx)
	stop()
	wg.Wait()
	logger.Info("weir shutting down")
	return serveErr
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

// register records this broker and its advertised endpoint in the metadata.
func (b *Broker) register(ctx context.Context) error {
	first := b.opts.Listeners[0]
	bound := b.srv.Addr(first.Name).(*net.TCPAddr)
	host, port := first.AdvertisedHost, first.AdvertisedPort
	if host == "" {
		host, _, _ = net.SplitHostPort(first.Addr)
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
	}
	if port == 0 {
		port = bound.Port
	}
	br := metadata.Broker{ID: b.nodeID, Host: host, Port: int32(port), Rack: b.opts.Rack}
	for _, l := range b.opts.Listeners {
		a := b.srv.Addr(l.Name).(*net.TCPAddr)
		br.Endpoints = append(br.Endpoints, metadata.Endpoint{Listener: l.Name, Host: host, Port: int32(a.Port), SecurityProtocol: "PLAINTEXT"})
	}
	if err := b.meta.RegisterBroker(ctx, br); err != nil {
		return fmt.Errorf("register broker %d: %w", b.nodeID, err)
	}
	return nil
}

func addrFromString(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		return nil
	}
	return a
}
