// Package report turns one suite run's measurements into docs/benchmarks.md
// and its charts. Everything here is computed from the Run: the page is
// generated, never edited by hand.
package report

import "time"

// Run is everything one run of the suite measured.
type Run struct {
	Machine  Machine
	Settings Settings
	Cases    []Case // throughput cases, in the order they ran
	Latency  []Latency
	// WriteLatency is the page cache's own latency at weir's end-to-end
	// latency rate (nil when not measured).
	WriteLatency *WriteLatency
	Sustain      *Sustained
	Startup      *Startup
	Recovery     *Recovery
	Notes        []string // what failed during the run, printed as is
	Took         time.Duration
}

// Machine is where the run happened.
type Machine struct {
	CPU                string
	Cores              int
	MemGiB             float64
	Kernel, Go, Date   string
	LoadStart, LoadEnd string // `uptime` load averages
	Disk               string // filesystem of the temp dir
	FreePageReporting  bool   // a virtio-balloon device hands freed memory to the host
	Versions           map[string]string
}

// Settings are the run's knobs, printed so a reader can repeat it.
type Settings struct {
	Quick    bool
	Rounds   int
	Duration time.Duration // each produce run
	MaxBytes int64         // cap of each produce run
	Warm     int64         // memory touched and freed before each produce run
	Command  string
}

// Kinds of throughput case.
const (
	Produce      = "produce"
	ProduceFsync = "produce-fsync"
	Consume      = "consume"
	ConsumeCold  = "consume-cold"
	Cluster      = "cluster"
	// The headline produce and consume again with the minimal client
	// (bench/internal/load/minimal.go), weir and kfake only.
	ProduceMinimal = "produce-minimal"
	ConsumeMinimal = "consume-minimal"
)

// Case is one workload measured on several brokers over rounds; Peers[0]
// is weir (the broker the ratios are about).
type Case struct {
	ID         string // stable key, e.g. "produce/1KiB/p8/c1/acks1"
	Kind       string
	RecordSize int
	Partitions int
	Producers  int
	Acks       int
	Peers      []Series
	Limits     []Series // the machine's limits in the same rounds
}

// Series is one broker's (or one limit's) figures, one per round (NaN for
// a round that failed).
type Series struct {
	Name     string
	MBps     []float64
	CPUPerGB []float64 // broker CPU s per GB moved (brokers only)
	Batch    []float64 // mean produce batch bytes (Kafka clients only)
	// ClientCPUPerGB is the clients' own CPU s per GB moved (the suite
	// process's), brokers only.
	ClientCPUPerGB []float64
}

// Latency is end-to-end latency at a fixed rate, per broker.
type Latency struct {
	Peer       string
	RecordSize int
	Rate       float64 // records/s
	PeakMBps   float64 // the peak it is half of; 0 for a fixed low rate
	// EndToEnd: PeakMBps is the rate producer, broker and consumer
	// sustained together (an unpaced latency run), not the produce peak.
	EndToEnd bool
	// Minimal: measured with the suite's minimal client (load.LatencyMinimal)
	// at the same rate as the broker's row with its usual client.
	Minimal bool
	Rounds  []LatencyRound
}

// Label is the broker's name, and the client when it is the minimal one.
func (l Latency) Label() string {
	if l.Minimal {
		return l.Peer + " (minimal client)"
	}
	return l.Peer
}

// LatencyRound is one run's percentiles.
type LatencyRound struct {
	N              int
	P50, P99, P999 time.Duration
	Received       float64 // records/s the consumer received after the warm-up
	// The broker's own p99 over the round from its /metrics (weir only;
	// 0 when not measured): Produce from request read to response
	// written, and consumer Fetch handling with the long-poll wait left
	// out (LocalTime).
	BrokerProduceP99, BrokerFetchP99 time.Duration
	// How late a goroutine that sleeps 200 us in a loop beside the run
	// woke (limits.StallProbe): its p99.9 and its worst. 0: not measured.
	StallP999, StallMax time.Duration
}

// WriteLatency is a paced file append's write times, one entry per round.
type WriteLatency struct {
	Chunk  int     // bytes per write
	MBps   float64 // the rate written at
	Rounds []LatencyRound
	Max    []time.Duration // the slowest write of each round
}

// Sustained is a long produce run sampled every second, with the disk.
type Sustained struct {
	Peer          string
	RecordSize    int
	Partitions    int
	Duration      time.Duration
	Timeline      []float64 // MB/s per second
	MBps          float64   // over the whole run
	DiskMBps      float64   // sustained write bandwidth of the disk (fsynced)
	DirtyLimitGiB float64   // page cache the kernel lets fill before writers wait
	WrittenGB     float64
}

// Startup is the many-partitions case.
type Startup struct {
	Partitions int
	Topics     int
	Create     time.Duration // CreateTopics until every leader is known
	Stop       time.Duration // SIGTERM until the process exited (logs closed)
	ToStarted  time.Duration // restart until "weir started"
	ToReady    time.Duration // restart until every partition answers ListOffsets
	IdleRSS    int64
	FDs        int
}

// Recovery is restart after kill -9 with unflushed data.
type Recovery struct {
	Bytes  int64 // unflushed value bytes held at the kill
	Rounds []RecoveryRound
}

// RecoveryRound is one kill and restart.
type RecoveryRound struct {
	ToLogsLoaded       time.Duration // restart until the log manager has recovered the segments (from weir's log)
	ToStarted, ToReady time.Duration
	// RegistrationRefused: weir's log shows the restarted broker's
	// registration refused while the killed incarnation's session lasted.
	RegistrationRefused bool
}
