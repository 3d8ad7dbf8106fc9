package suite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/weir-project/weir/bench/internal/limits"
	"github.com/weir-project/weir/bench/internal/load"
	"github.com/weir-project/weir/bench/internal/peer"
	"github.com/weir-project/weir/bench/internal/proc"
	"github.com/weir-project/weir/bench/internal/report"
	"github.com/weir-project/weir/bench/internal/stats"
)

// sustained produces to weir for a long (but bounded) run sampled every
// second, then measures the disk's own write bandwidth.
func (s *Suite) sustained(ctx context.Context) error {
	const size, parts = 1024, 8
	if !s.selected("sustained") {
		return nil
	}
	s.log.Info("case", "id", "sustained")
	b, _, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp)
	if err != nil {
		return err
	}
	defer s.stopAll([]*peer.Broker{b})
	topic := s.topic()
	if err := createTopic(ctx, b, topic, parts, 1, nil); err != nil {
		return err
	}
	res, _, err := s.produce(ctx, b, topic, load.Workload{RecordSize: size, Partitions: parts, Producers: 1, Acks: 1,
		Duration: s.cfg.Sustained, Sample: time.Second})
	if err != nil {
		return fmt.Errorf("sustained produce: %w", err)
	}
	// Free the space and let the kernel write back before timing the disk.
	if err := deleteTopic(ctx, b, topic, parts); err != nil {
		s.note("sustained: %v", err)
	}
	dr, err := limits.DiskWrite(s.cfg.Tmp, s.cfg.DiskBytes)
	if err != nil {
		return fmt.Errorf("disk bandwidth: %w", err)
	}
	dirty, err := dirtyLimit()
	if err != nil {
		s.note("sustained: %v", err)
	}
	s.run.Sustain = &report.Sustained{Peer: b.Name, RecordSize: size, Partitions: parts, Duration: s.cfg.Sustained,
		Timeline: res.Timeline, MBps: stats.MBps(res.Bytes, res.Elapsed), DiskMBps: stats.MBps(dr.Bytes, dr.Elapsed),
		DirtyLimitGiB: float64(dirty) / (1 << 30), WrittenGB: float64(res.Bytes) / 1e9}
	return nil
}

// dirtyLimit is how much dirty page cache the kernel allows before it
// throttles writers: vm.dirty_bytes, or vm.dirty_ratio percent of the
// available memory.
func dirtyLimit() (int64, error) {
	if b, err := readInt("/proc/sys/vm/dirty_bytes"); err == nil && b > 0 {
		return b, nil
	}
	ratio, err := readInt("/proc/sys/vm/dirty_ratio")
	if err != nil {
		return 0, err
	}
	avail, err := meminfo("MemAvailable")
	if err != nil {
		return 0, err
	}
	return avail * ratio / 100, nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// meminfo is a /proc/meminfo field in bytes.
func meminfo(field string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo %s: %w", field, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("meminfo: no %s", field)
}

// waitServing polls until every partition of topics answers ListOffsets
// and, if want >= 0, their end offsets add up to want.
func waitServing(ctx context.Context, addr string, want int64, topics ...string) error {
	adm, err := load.NewAdmin([]string{addr})
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var last error
	for {
		sum, ok, err := adm.EndOffsets(ctx, topics...)
		if err == nil && ok && (want < 0 || sum == want) {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("end offsets add up to %d of %d (all answered: %v)", sum, want, ok)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not serving: %w (last: %v)", ctx.Err(), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// manyPartitions creates ManyParts partitions on one node, restarts it and
// times the start until every partition serves; then the idle RSS.
func (s *Suite) manyPartitions(ctx context.Context) error {
	if !s.selected("partitions") {
		return nil
	}
	s.log.Info("case", "id", "partitions", "partitions", s.cfg.ManyParts)
	// Kafka's max.broker.partitions (KIP-578; weir's default 4000) would
	// refuse the topics: raised for this case only.
	b, node, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp, fmt.Sprintf("max.broker.partitions=%d", 2*s.cfg.ManyParts))
	if err != nil {
		return err
	}
	defer s.stopAll([]*peer.Broker{b})
	perTopic := min(1000, s.cfg.ManyParts)
	var topics []string
	t0 := time.Now()
	for n := 0; n < s.cfg.ManyParts; n += perTopic {
		topic := s.topic()
		if err := createTopic(ctx, b, topic, perTopic, 1, nil); err != nil {
			return err
		}
		topics = append(topics, topic)
	}
	st := &report.Startup{Partitions: len(topics) * perTopic, Topics: len(topics), Create: time.Since(t0)}
	t0 = time.Now()
	if err := node.Proc.Stop(time.Minute); err != nil {
		return fmt.Errorf("stop before restart: %w", err)
	}
	st.Stop = time.Since(t0)
	t0 = time.Now()
	if err := node.Start(); err != nil {
		return fmt.Errorf("restart with %d partitions: %w", st.Partitions, err)
	}
	st.ToStarted = time.Since(t0)
	b.Procs[0] = node.Proc
	if err := waitServing(ctx, node.Addr, -1, topics...); err != nil {
		return err
	}
	st.ToReady = time.Since(t0)
	// Idle: let start-up work settle, then take the largest RSS of a few
	// seconds.
	for range 10 {
		time.Sleep(500 * time.Millisecond)
		if rss, err := proc.RSS(node.Proc.PID()); err == nil {
			st.IdleRSS = max(st.IdleRSS, rss)
		}
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", node.Proc.PID())); err == nil {
		st.FDs = len(ents)
	}
	s.run.Startup = st
	return nil
}

// recovery holds Recovery unflushed bytes on a node, kills it with
// SIGKILL and times the restart until the acknowledged end offsets are
// served again.
func (s *Suite) recovery(ctx context.Context) error {
	if !s.selected("recovery") {
		return nil
	}
	s.log.Info("case", "id", "recovery", "bytes", s.cfg.Recovery)
	rc := &report.Recovery{}
	for range s.cfg.RecoveryRounds {
		rd, bytes, err := s.recoveryRound(ctx)
		if err != nil {
			s.note("recovery: %v", err)
			continue
		}
		rc.Bytes = bytes
		rc.Rounds = append(rc.Rounds, rd)
	}
	if len(rc.Rounds) > 0 {
		s.run.Recovery = rc
	}
	return nil
}

func (s *Suite) recoveryRound(ctx context.Context) (report.RecoveryRound, int64, error) {
	const size, parts = 1024, 8
	b, node, err := peer.StartWeir(s.bins.Weir, s.cfg.Tmp)
	if err != nil {
		return report.RecoveryRound{}, 0, err
	}
	defer s.stopAll([]*peer.Broker{b})
	topic := s.topic()
	if err := createTopic(ctx, b, topic, parts, 1, nil); err != nil {
		return report.RecoveryRound{}, 0, err
	}
	res, warm, err := s.produce(ctx, b, topic, load.Workload{RecordSize: size, Partitions: parts, Producers: 1, Acks: 1,
		Duration: 10 * time.Minute, MaxBytes: s.cfg.Recovery})
	if err != nil {
		return report.RecoveryRound{}, 0, err
	}
	node.Proc.Kill()
	t0 := time.Now()
	if err := node.Start(); err != nil {
		return report.RecoveryRound{}, 0, fmt.Errorf("restart after kill -9: %w", err)
	}
	b.Procs[0] = node.Proc
	rd := report.RecoveryRound{ToStarted: time.Since(t0)}
	if err := waitServing(ctx, node.Addr, res.Records+warm, topic); err != nil {
		return report.RecoveryRound{}, 0, err
	}
	rd.ToReady = time.Since(t0)
	if at, ok := logTime(node.Proc.Output(), "log manager loaded"); ok {
		rd.ToLogsLoaded = at.Sub(t0)
	}
	rd.RegistrationRefused = strings.Contains(node.Proc.Output(), "DUPLICATE_BROKER_REGISTRATION")
	return rd, res.Bytes, nil
}

// logTimeRE is the timestamp weir's log lines start with.
var logTimeRE = regexp.MustCompile(`^time=(\S+)`)

// logTime is the time of the first log line holding msg.
func logTime(output, msg string) (time.Time, bool) {
	for _, line := range strings.Split(output, "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		m := logTimeRE.FindStringSubmatch(line)
		if m == nil {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, m[1])
		return t, err == nil
	}
	return time.Time{}, false
}
