package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weir-project/weir/internal/broker"
	"github.com/weir-project/weir/internal/config"
	"github.com/weir-project/weir/internal/replication"
	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/storage"
)

func serveCommand() *cobra.Command {
	var (
		overrides  []string
		logLevel   string
		cpuProfile string
		memProfile string
	)
	cmd := &cobra.Command{
		Use:   "serve [server.properties]",
		Short: "Run a broker (and controller)",
		Long: `Run a weir broker. With no arguments it starts a single-node cluster
(node.id=1, broker and controller) listening on 127.0.0.1:9092 with its data
in ./weir-data, its metrics at http://127.0.0.1:9644/metrics and its web
console at http://127.0.0.1:9645/. Configuration uses Kafka's key names and defaults, from a
server.properties file and/or --override key=value (overrides win).
See config/server.properties for every key.

SIGTERM or Ctrl-C shuts down cleanly; after a crash (kill -9) the logs are
recovered at the next start.`,
		Example: `  weir serve
  weir serve config/server.properties
  weir serve --override log.dirs=/var/lib/weir --override listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093`,
		Args:         cobra.MaximumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			noArgs := len(args) == 0 && len(overrides) == 0
			cfg, warnings, err := config.Load(path, overrides)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				logger.Warn(w)
			}
			if noArgs {
				// The no-argument single-node broker is for trying weir
				// out: its metrics and console are on, at local ports.
				cfg.MetricsListener = defaultMetricsListener
				logger.Info("metrics on by default for weir serve with no arguments", "metrics.listener", cfg.MetricsListener)
				cfg.ConsoleListener = defaultConsole
			}
			opts, err := brokerOptions(cfg)
			if err != nil {
				return err
			}
			opts.Logger = logger
			opts.Storage.BeforeRollFlush = rollFlushGate(logger)
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			if memProfile != "" {
				// A sample every 4 KiB allocated instead of 512 KiB, so
				// that small per-request allocations show too.
				runtime.MemProfileRate = 4096
				defer writeAllocProfile(memProfile, logger)
			}
			con, err := listenConsole(cmd.Context(), cfg, noArgs, logger)
			if err != nil {
				return err
			}
			con.hook(&opts)
			defer con.stop()
			return broker.Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a configuration key (key=value); repeatable, wins over the file")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&cpuProfile, "cpu-profile", "", "write a pprof CPU profile of the broker to this file (written at shutdown)")
	cmd.Flags().StringVar(&memProfile, "mem-profile", "", "write a pprof allocation profile of the broker to this file (written at shutdown)")
	return cmd
}

// startCPUProfile profiles the broker until the returned stop is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeAllocProfile writes the allocations since start (pprof "allocs").
func writeAllocProfile(path string, logger *slog.Logger) {
	f, err := os.Create(path)
	if err != nil {
		logger.Error("--mem-profile", "err", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		logger.Error("--mem-profile", "err", err)
	}
}

// unboundedIfNotPositive maps Kafka's "unbounded" values of
// queued.max.request.bytes (-1, or any value <= 0) to the server's -1.
func unboundedIfNotPositive(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// noneIfNotPositive maps a disabled duration (<= 0) to the server's -1.
func noneIfNotPositive(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// brokerOptions derives the broker's options from the configuration.
func brokerOptions(cfg *config.Broker) (broker.Options, error) {
	brokerOnly := !cfg.HasRole("controller")
	if !cfg.HasRole("broker") {
		return broker.Options{}, fmt.Errorf("process.roles=%s: a controller-only node is not supported yet; use broker,controller", strings.Join(cfg.ProcessRoles, ","))
	}
	ctrl, ok := cfg.ControllerListener()
	if !ok && !brokerOnly {
		return broker.Options{}, fmt.Errorf("listeners: no controller listener (controller.listener.names=%s)", strings.Join(cfg.ControllerListenerNames, ","))
	}
	opts := broker.Options{
		NodeID:                    cfg.NodeID,
		Rack:                      cfg.BrokerRack,
		LogDirs:                   cfg.LogDirs,
		MetadataLogDir:            cfg.MetadataLogDir,
		ControllerAddr:            ctrl.Addr(),
		ControllerListener:        ctrl.Name,
		BrokerOnly:                brokerOnly,
		InterBrokerListener:       cfg.InterBrokerListenerName,
		HeartbeatInterval:         ms(cfg.BrokerHeartbeatIntervalMs),
		SessionTimeout:            ms(cfg.BrokerSessionTimeoutMs),
		ReplicaLagMax:             ms(cfg.ReplicaLagTimeMaxMs),
		ControlledShutdown:        cfg.ControlledShutdownEnable,
		ControlledShutdownTimeout: ms(cfg.ControlledShutdownTimeoutMs),
		AutoLeaderRebalance:       cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheck:      time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second,
		Replication:               replication.ConfigFromBroker(cfg),
		MaxRequestBytes:           int32(min(cfg.SocketRequestMaxBytes, 1<<31-1)),
		ConnectionsMaxIdle:        time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
		QueuedMaxRequestBytes:     unboundedIfNotPositive(cfg.QueuedMaxRequestBytes),
		MaxNonProduceRequestBytes: int32(min(cfg.RequestMaxBytesNonProduce, 1<<31-1)),
		TransferTimeout:           noneIfNotPositive(time.Duration(cfg.TransferTimeoutMs) * time.Millisecond),
		TransferMinRate:           cfg.TransferMinBytesPerSecond,
		CopyFetchRecords:          !cfg.FetchSendfileEnable,
		ConnLimits: &server.ConnLimits{
			MaxConnections:      cfg.MaxConnections,
			MaxConnectionsPerIP: cfg.MaxConnectionsPerIP,
			PerIPOverrides:      cfg.MaxConnectionsPerIPOverrides,
			ProtectedListener:   cfg.InterBrokerListenerName,
		},
		AutoCreateTopics:   cfg.AutoCreateTopicsEnable,
		DefaultPartitions:  cfg.NumPartitions,
		DefaultReplication: cfg.DefaultReplicationFactor,
		Config:             cfg,
		Metrics: broker.MetricsOptions{
			Addr:           cfg.MetricsAddr(),
			Pprof:          cfg.MetricsPprofEnable,
			PartitionLevel: cfg.MetricsPartitionLevelEnable,
		},
		Storage: storage.ManagerConfig{
			Dirs:                     cfg.LogDirs,
			Defaults:                 broker.LogConfig(cfg.ResolveTopic(nil)),
			RetentionCheckIntervalMs: cfg.LogRetentionCheckIntervalMs,
			FlushSchedulerIntervalMs: cfg.LogFlushSchedulerIntervalMs,
			CheckpointIntervalMs:     cfg.LogFlushOffsetCheckpointIntervalMs,
			HWCheckpointIntervalMs:   cfg.ReplicaHighWatermarkCheckpointIntervalMs,
			DisableCleaner:           !cfg.LogCleanerEnable,
			CleanerBackoffMs:         cfg.LogCleanerBackoffMs,
			CleanerDedupeBufferSize:  cfg.LogCleanerDedupeBufferSize,
			MaxOpenFiles:             int(cfg.LogMaxOpenFiles),
			RecoveryThreadsPerDir:    int(cfg.NumRecoveryThreadsPerDataDir),
		},
	}
	// A single voter that is this node needs no address list: the
	// controller uses its bound address (the port may be 0 in tests).
	if len(cfg.QuorumVoters) > 1 || (len(cfg.QuorumVoters) == 1 && cfg.QuorumVoters[0].ID != cfg.NodeID) || brokerOnly {
		opts.Voters = map[int32]string{}
		for _, v := range cfg.QuorumVoters {
			opts.Voters[v.ID] = v.Addr()
		}
	}
	for _, l := range cfg.ClientListeners() {
		bl := broker.Listener{Name: l.Name, Addr: l.Addr()}
		for _, a := range cfg.AdvertisedListeners {
			if a.Name == l.Name {
				bl.AdvertisedHost = a.Host
				bl.AdvertisedPort = a.Port
			}
		}
		opts.Listeners = append(opts.Listeners, bl)
	}
	if len(opts.Listeners) == 0 {
		return opts, fmt.Errorf("listeners: no client listener besides the controller's")
	}
	return opts, nil
}

// defaultMetricsListener is where weir serve with no arguments serves
// its metrics (the port Redpanda's admin API uses for the same).
const defaultMetricsListener = "http://127.0.0.1:9644"

// ms converts a millisecond setting.
func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
