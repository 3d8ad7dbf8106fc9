// Package broker serves Kafka's APIs on top of the metadata controller,
// the replica manager and the storage engine. One file per API family;
// this one owns the broker's lifecycle (start.go and stop.go the pieces
// of its start and stop), cluster.go its links to the controller and the
// other brokers, reconcile.go the local replicas' following of the
// metadata.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/coalesce"
	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/controller"
	"github.com/weir-project/weir/internal/ctrlclient"
	"github.com/weir-project/weir/internal/group"
	"github.com/weir-project/weir/internal/metadata"
	"github.com/weir-project/weir/internal/mux"
	"github.com/weir-project/weir/internal/replica"
	"github.com/weir-project/weir/internal/replication"
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
	NodeID         int32
	Rack           string
	LogDirs        []string
	MetadataLogDir string     // metadata.log.dir: Raft's home; "" = the first log dir
	Listeners      []Listener // client listeners; the first is advertised in Metadata
	// InterBrokerListener names the listener followers fetch from
	// (inter.broker.listener.name; "" = the first client listener).
	InterBrokerListener string
	// ControllerListener names the CONTROLLER listener and ControllerAddr
	// is where it binds; it carries the controller's Kafka APIs and the
	// quorum's Raft traffic on one port. BrokerOnly nodes have none: they
	// follow the metadata log as Raft non-voters on the inter-broker
	// listener and reach the controllers at Voters.
	ControllerListener string
	ControllerAddr     string
	BrokerOnly         bool
	// Voters is controller.quorum.voters (id -> controller address); nil
	// means this node alone.
	Voters             map[int32]string
	MaxRequestBytes    int32
	ConnectionsMaxIdle time.Duration
	// Network limits against hostile clients (see server.Config).
	QueuedMaxRequestBytes     int64 // <= 0: unbounded
	MaxNonProduceRequestBytes int32
	TransferTimeout           time.Duration // <= 0: none
	TransferMinRate           int64         // bytes per second
	CopyFetchRecords          bool          // weir.fetch.sendfile.enable=false: record sets copied, not sendfile
	ConnLimits                *server.ConnLimits
	AutoCreateTopics          bool
	DefaultPartitions         int32
	DefaultReplication        int16
	Storage                   storage.ManagerConfig
	// Cluster timing (broker.heartbeat.interval.ms, broker.session.timeout.ms,
	// replica.lag.time.max.ms) and shutdown.
	HeartbeatInterval         time.Duration
	SessionTimeout            time.Duration
	ReplicaLagMax             time.Duration
	ControlledShutdown        bool
	ControlledShutdownTimeout time.Duration
	AutoLeaderRebalance       bool
	LeaderImbalanceCheck      time.Duration
	Replication               replication.Config
	// Config is the parsed broker configuration: topic defaults and the
	// DescribeConfigs listing come from it.
	Config *config.Broker
	Logger *slog.Logger
	// Metrics configures the metrics listener (metrics.go); its zero
	// value is off.
	Metrics MetricsOptions
	// Traffic, if set, is told this broker's record bytes in and out
	// (traffic.go).
	Traffic *Traffic
	// Ready, if set, is called once the broker serves, with the bound
	// address of each listener by name.
	Ready func(addrs map[string]net.Addr)
}

// Broker is one running broker.
type Broker struct {
	opts   Options
	nodeID int32
	log    *slog.Logger
	// incarnation is this process's broker incarnation id, drawn at start.
	incarnation [16]byte
	logs        *storage.Manager
	replicas    *replica.Manager
	meta        *metadata.Controller
	// clientSrv serves the client listeners, ctrlSrv the CONTROLLER one.
	clientSrv *server.Server
	ctrlSrv   *server.Server
	ctrlMux   *mux.Mux
	// ctrl reaches the active controller; lifecycle registers and
	// heartbeats through it; ctrlSvc answers as a controller.
	ctrl      *ctrlclient.Client
	lifecycle *ctrlclient.Lifecycle
	// pokes is lifecycle once register has set it, for reconcile: that
	// may run on another goroutine before (a CreateTopics forwarded to
	// this node as the active controller while its broker registers).
	pokes    atomic.Pointer[ctrlclient.Lifecycle]
	ctrlSvc  *controller.Service
	fetchers *replication.Manager
	isr      *isrBatcher
	// producerIDs hands out idempotent producer ids (InitProducerId).
	producerIDs *txn.ProducerIDs
	// groups is the consumer group coordinator (groups.go).
	groups *group.Coordinator
	// dynamic is the effective configuration (dynconfig.go).
	dynamic dynamicConfig

	// obs counts produce, fetch and ISR events for the metrics (a no-op
	// when they are off); live and ready are what /readyz and the state
	// gauges read (metrics.go).
	obs   eventObserver
	live  atomic.Bool
	ready atomic.Bool
	// waitingProduces and waitingFetches are the requests waiting for
	// acks or data now (Kafka's purgatory sizes).
	waitingProduces atomic.Int64
	waitingFetches  atomic.Int64

	// moves are replica moves between log dirs in flight (logdirs_move.go).
	moves sync.WaitGroup

	reconcileMu sync.Mutex
	lastImage   *metadata.Image
	// reconciled is lastImage's index: how far the local replicas are in
	// line with the metadata. Heartbeats report it (the controller's
	// AwaitApplied waits on it), not the index applied, because a broker
	// that has applied a new topic but not opened its replicas yet still
	// answers UNKNOWN_TOPIC_OR_PARTITION for it.
	reconciled reconciledIndex
	// probe reads the active controller's commit index (catchup.go).
	probe       *coalesce.Runner[uint64]        // the active controller's commit index (catchup.go)
	retry       map[storage.TopicPartition]bool // partitions whose last reconciliation failed
	unknownLogs map[storage.TopicPartition]bool // warned about once
}

// startTimeout bounds the start: a quorum to elect a controller, the
// registration, catching up with the metadata.
const startTimeout = 120 * time.Second

// Run starts the broker and serves until ctx is cancelled, then shuts
// down cleanly: leaderships moved away (controlled shutdown), listeners
// closed, checkpoints and the clean-shutdown marker written, metadata
// store closed.
func Run(ctx context.Context, opts Options) (err error) {
	opts.setDefaults()
	logger := opts.Logger
	b := &Broker{opts: opts, nodeID: opts.NodeID, log: logger, retry: map[storage.TopicPartition]bool{},
		unknownLogs: map[storage.TopicPartition]bool{}}
	for _, dir := range opts.LogDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create log dir: %w", err)
		}
	}
	storedClusterID, err := readMetaProperties(opts.LogDirs, opts.NodeID)
	if err != nil {
		return err
	}
	// The metrics listener answers from the start (/healthz while the
	// logs load) and closes last.
	reqObs, metricsAddr, stopMetrics, err := b.startMetrics()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopMetrics()) }()
	if opts.Traffic != nil {
		b.obs = trafficObserver{eventObserver: b.events(), traffic: opts.Traffic}
	}

	raftListener, raftBind, err := opts.raftBinding()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", raftBind)
	if err != nil {
		return fmt.Errorf("listen %s on %s: %w", raftListener, raftBind, err)
	}
	b.ctrlMux = mux.New(ln, opts.ConnectionsMaxIdle, logger.With("component", "mux"))
	defer func() { err = errors.Join(err, b.ctrlMux.Close()) }()
	ctrlAddr := ln.Addr().String()

	srvCfg := opts.serverConfig(reqObs)
	if !opts.BrokerOnly {
		ctrlCfg := srvCfg
		ctrlCfg.Listeners = []server.Listener{{Name: opts.ControllerListener, Listener: b.ctrlMux.Kafka(), Unbudgeted: true}}
		// The server names the listener in every line itself.
		b.ctrlSrv, err = server.New(ctrlCfg, b, logger.With("component", "server"))
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		defer func() { err = errors.Join(err, b.ctrlSrv.Close()) }()
	}
	clientCfg := srvCfg
	clientCfg.Limits = opts.ConnLimits
	for _, l := range opts.Listeners {
		sl := server.Listener{Name: l.Name, Addr: l.Addr}
		if opts.BrokerOnly && l.Name == raftListener {
			sl.Listener = b.ctrlMux.Kafka()
		}
		clientCfg.Listeners = append(clientCfg.Listeners, sl)
	}
	b.clientSrv, err = server.New(clientCfg, b, logger.With("component", "server"))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer func() { err = errors.Join(err, b.clientSrv.Close()) }()

	storageCfg := opts.Storage
	storageCfg.FlushObserver = b.storageObserver()
	b.logs, err = storage.OpenManager(storageCfg, logger.With("component", "storage"))
	if err != nil {
		return fmt.Errorf("open logs: %w", err)
	}
	if b.logs.LoadStats().LostUnflushed {
		logger.Warn("the logs were not shut down cleanly and the machine has restarted since: writes not yet flushed may be lost; " +
			"this broker registers as such, so it leaves every ELR and no longer leads as the last ISR member where another replica is eligible")
	}
	defer func() {
		start, n := time.Now(), len(b.logs.Partitions())
		cerr := b.logs.Close()
		logger.Info("logs closed", slog.Int("partitions", n), slog.Duration("took", time.Since(start).Round(time.Millisecond)),
			slog.Bool("clean", cerr == nil))
		err = errors.Join(err, cerr)
	}()
	b.isr = newISRBatcher(b)
	b.replicas = replica.NewManager(b.logs, opts.NodeID)
	b.replicas.SetLogger(logger.With("component", "replica"))
	b.replicas.SetISRChanger(b.isr, opts.ReplicaLagMax)
	b.groups = b.newGroupCoordinator()
	defer b.groups.Close()

	voters := opts.Voters
	if len(voters) == 0 {
		voters = map[int32]string{opts.NodeID: ctrlAddr}
	}
	// A controller missing from controller.quorum.voters is an observer
	// (KIP-853): it joins as a non-voter, to be promoted by AddRaftVoter.
	_, listed := voters[opts.NodeID]
	observer := !opts.BrokerOnly && !listed
	if err := b.openMetadata(storedClusterID, ctrlAddr, opts.BrokerOnly || observer); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.closeMetadata()) }()
	if err := b.newControllerLinks(voters); err != nil {
		return err
	}
	defer b.ctrl.Close()
	b.probe = coalesce.New(b.probeCommitIndex)
	b.producerIDs = txn.NewProducerIDs(producerIDSource{b}, txn.DefaultBlockSize)
	replCfg := opts.Replication
	replCfg.Observer = b.replicationObserver()
	b.fetchers = replication.New(replCfg, &replication.WireDialer{Resolve: b.brokerAddr, LocalID: opts.NodeID}, logger)
	defer b.fetchers.Close()

	// The controller side serves from the start: the quorum elects its
	// leader over Raft, and brokers (this one included) register with it.
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	var bgWG sync.WaitGroup
	// Cancel before waiting: deferred calls run last-registered first, so
	// the stopBG above would come after this wait, and a broker-only node
	// (no controller server whose cleanup cancels bg) never exited on
	// SIGTERM.
	defer func() { stopBG(); bgWG.Wait() }()
	if b.ctrlSrv != nil {
		serveCtrl := make(chan error, 1)
		go func() { serveCtrl <- b.ctrlSrv.Serve(bg) }()
		defer func() { stopBG(); err = errors.Join(err, <-serveCtrl) }()
		bgWG.Add(1)
		go func() { defer bgWG.Done(); b.ctrlSvc.Run(bg) }()
	}

	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if observer {
		// Registering as a controller makes the active controller add this
		// node to Raft at its CONTROLLER listener.
		if err := b.registerController(startCtx, ctrlAddr); err != nil {
			return err
		}
	}
	if opts.BrokerOnly || observer {
		// Registering makes the controller add this node to Raft as a
		// non-voter; only then does the metadata log reach it.
		if err := b.register(startCtx, storedClusterID); err != nil {
			return err
		}
	}
	if err := b.meta.WaitLeader(startCtx); err != nil {
		return fmt.Errorf("wait for a metadata quorum leader: %w", err)
	}
	if cid := b.meta.Image().ClusterID(); storedClusterID != "" && cid != storedClusterID {
		return fmt.Errorf("log dirs belong to cluster %s but the metadata store holds cluster %s", storedClusterID, cid)
	}
	if err := writeMetaProperties(opts.LogDirs, opts.NodeID, b.meta.Image().ClusterID()); err != nil {
		return err
	}
	if !opts.BrokerOnly && !observer {
		if err := b.register(startCtx, b.meta.Image().ClusterID()); err != nil {
			return err
		}
	}
	bgWG.Add(2)
	go func() { defer bgWG.Done(); b.lifecycle.Run(bg) }()
	go func() { defer bgWG.Done(); b.isr.run(bg) }()

	// Serve once this broker's own registration is in its image: from
	// then on the image holds every partition it must host.
	epoch := b.lifecycle.Epoch()
	if !b.waitImage(startCtx, func(im *metadata.Image) bool { return int64(im.Index()) >= epoch }) {
		return fmt.Errorf("catch up with the metadata log to index %d: %w", epoch, startCtx.Err())
	}
	// Partitions that cannot be opened yet do not stop the broker: the
	// others serve, and watchMetadata retries these.
	b.reconcile()
	// Every component the state gauges read exists from here on.
	b.live.Store(true)
	if err := b.lifecycle.WaitUnfenced(startCtx); err != nil {
		return fmt.Errorf("broker %d: %w", opts.NodeID, err)
	}

	runCtx, stop := context.WithCancel(bg)
	defer stop()
	var wg sync.WaitGroup
	// Taken before the coordinator can own a partition (see
	// watchDeletedTopics).
	deletedSince := b.meta.Image()
	wg.Add(6)
	go func() { defer wg.Done(); b.logs.Run(runCtx) }()
	go func() { defer wg.Done(); b.watchMetadata(runCtx) }()
	go func() { defer wg.Done(); b.expireProducers(runCtx) }()
	go func() { defer wg.Done(); b.watchGroupPartitions(runCtx) }()
	go func() { defer wg.Done(); b.watchDeletedTopics(runCtx, deletedSince) }()
	go func() { defer wg.Done(); b.shrinkISRs(runCtx) }()

	serveClients := make(chan error, 1)
	go func() { serveClients <- b.clientSrv.Serve(runCtx) }()
	addrs := map[string]net.Addr{}
	for _, l := range opts.Listeners {
		addrs[l.Name] = b.clientSrv.Addr(l.Name)
	}
	if !opts.BrokerOnly {
		addrs[opts.ControllerListener] = ln.Addr()
	}
	b.ready.Store(true)
	// Tests and scripts read the bound addresses from this line.
	logger.Info("weir started", b.startedAttrs(addrs, metricsAddr)...)
	if opts.Ready != nil {
		opts.Ready(addrs)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-serveClients:
		serveClients = nil
	}
	b.ready.Store(false)
	logger.Info("weir shutting down")
	// No new client connections from here on; those open are served
	// through the controlled shutdown, which moves the leaderships away.
	if err := b.clientSrv.StopAccepting(); err != nil {
		logger.Warn("closing the client listeners", slog.Any("err", err))
	}
	if b.controlledShutdown() {
		b.drainClients()
	}
	stop()
	if serveClients != nil {
		serveErr = <-serveClients
	}
	wg.Wait()
	b.moves.Wait()
	b.fetchers.Close()
	return serveErr
}

// mayBeStale reports that the controller may have fenced this broker
// without its metadata showing it yet (no heartbeat answered "unfenced"
// within the session timeout: it was stopped, or cut off from every
// controller). What it leads may have moved to a leader with a longer
// log, so it must not tell a client that an offset beyond its own log end
// does not exist.
func (b *Broker) mayBeStale() bool {
	return b.lifecycle == nil || !b.lifecycle.InSession(time.Now())
}

// register registers this broker with the active controller, as a new
// incarnation, and prepares its heartbeats.
func (b *Broker) register(ctx context.Context, clusterID string) error {
	inc := b.incarnation
	var listeners []kmsg.BrokerRegistrationRequestListener
	ordered := append([]Listener(nil), b.opts.Listeners...)
	// The inter-broker listener first: it is what Metadata advertises and
	// followers fetch from.
	for i, l := range ordered {
		if l.Name == b.opts.InterBrokerListener {
			ordered[0], ordered[i] = ordered[i], ordered[0]
		}
	}
	for _, l := range ordered {
		host, port := b.advertised(l)
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, host, uint16(port)
		listeners = append(listeners, rl)
	}
	b.lifecycle = ctrlclient.NewLifecycle(b.ctrl, ctrlclient.Registration{
		ClusterID:     clusterID,
		Incarnation:   inc,
		Listeners:     listeners,
		Rack:          b.opts.Rack,
		PreviousEpoch: b.logs.BrokerEpoch(),
	}, b.opts.HeartbeatInterval, b.opts.SessionTimeout, b.reconciled.Load, b.log.With("component", "lifecycle"))
	b.pokes.Store(b.lifecycle)
	epoch, err := b.lifecycle.Register(ctx)
	if err != nil {
		return err
	}
	// Named at the next registration, unless the logs lose writes before.
	if err := b.logs.SetBrokerEpoch(epoch); err != nil {
		return err
	}
	b.fetchers.SetBrokerEpoch(epoch)
	return nil
}

// advertised is the host and port a listener is reached at.
func (b *Broker) advertised(l Listener) (string, int) {
	host, port := l.AdvertisedHost, l.AdvertisedPort
	if host == "" {
		host, _, _ = net.SplitHostPort(l.Addr)
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
	}
	if port == 0 {
		if a, ok := b.clientSrv.Addr(l.Name).(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	return host, port
}
