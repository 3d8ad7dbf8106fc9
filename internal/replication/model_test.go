package replication

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/weir-project/weir/internal/storage"
)

// TestEpochTruncationModel drives three brokers through random appends,
// leader changes, crashes and restarts with stale high watermarks, with
// the fetchers running all the while, and checks what replication
// promises. A batch is committed once a leader's high watermark passes
// it; every replica is in the ISR here, so the high watermark is the
// smallest log end any replica reported, and:
//
//   - a committed batch never changes (same offsets, epoch and CRC
//     wherever it is seen);
//   - every leader, and every replica at the moment it stops, holds every
//     committed batch: truncation by epoch never cuts below what was
//     committed, whatever the stale high watermark a replica restarted
//     with (truncating to it is KIP-101's data loss);
//   - once everyone is back, all logs are identical to the last leader's
//     and hold every committed batch.
//
// Crashed leaders sometimes come back without what they wrote in their
// last epoch that no follower had reported holding (unflushed writes lost
// with the machine; anything else lost so is not replication's to save).
//
// WEIR_MODEL_SEEDS=n runs more seeds.
func TestEpochTruncationModel(t *testing.T) {
	seeds := 12
	if s, err := strconv.Atoi(os.Getenv("WEIR_MODEL_SEEDS")); err == nil && s > 0 {
		seeds = s
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) { runEpochModel(t, seed) })
	}
}

type epochModel struct {
	t         *testing.T
	c         *cluster
	rng       *rand.Rand
	committed map[int64]batchID // by base offset
	// lastHW is each broker's high watermark when it stopped: it restarts
	// with at most that (a checkpoint written at some earlier time).
	lastHW map[int32]int64
}

func runEpochModel(t *testing.T, seed uint64) {
	logCfg := storage.DefaultConfig()
	logCfg.SegmentBytes = 1024 // truncations cross segments
	m := &epochModel{
		t:         t,
		c:         newClusterWithLogs(t, []int32{1, 2, 3}, []storage.TopicPartition{tpA}, Config{}, logCfg),
		rng:       rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15)),
		committed: map[int64]batchID{},
		lastHW:    map[int32]int64{},
	}
	c := m.c
	c.elect(1)
	for step := range 80 {
		alive := m.alive()
		switch op := m.rng.IntN(12); {
		case op < 4:
			for range 1 + m.rng.IntN(3) {
				c.produce(tpA, 1+m.rng.IntN(4))
			}
			t.Logf("step %d: leader %d at %d", step, c.leader, c.leaderPart(tpA).Offsets().LogEnd)
		case op < 6:
			c.waitInSync()
			t.Logf("step %d: in sync", step)
		case op < 7 && len(alive) > 1:
			m.crash(m.pick(slices.DeleteFunc(slices.Clone(alive), func(id int32) bool { return id == c.leader })))
		case op < 8 && len(alive) > 1:
			old := c.leader
			m.crash(old)
			c.elect(m.pick(m.alive()))
			t.Logf("step %d: broker %d elected in epoch %d", step, c.leader, c.epoch)
		case op < 10 && len(alive) < 3:
			dead := slices.DeleteFunc(slices.Clone(c.ids), func(id int32) bool { return c.nodes[id].alive })
			m.restart(m.pick(dead))
		case op < 11:
			c.elect(m.pick(alive))
			t.Logf("step %d: broker %d elected in epoch %d", step, c.leader, c.epoch)
		}
		m.observe(step)
	}
	for _, id := range c.ids {
		if !c.nodes[id].alive {
			m.restart(id)
		}
	}
	c.produce(tpA, 1)
	c.waitInSync()
	leader := c.leaderPart(tpA)
	waitFor(t, "everything committed", func() bool { return leader.Offsets().HighWater == leader.Offsets().LogEnd })
	m.observe(-1)
	final := c.checkIdentical()[tpA]
	m.holdsCommitted("every replica at the end", final)
	t.Logf("%d epochs, %d batches, %d committed; %d truncations by epoch, %d of them a step of a walk back",
		c.epoch+1, len(final), len(m.committed), c.logs.count("truncated by leader epoch"), c.logs.count("truncated by leader epoch", "done=false"))
}

func (m *epochModel) alive() []int32 {
	var out []int32
	for _, id := range m.c.ids {
		if m.c.nodes[id].alive {
			out = append(out, id)
		}
	}
	return out
}

func (m *epochModel) pick(ids []int32) int32 { return ids[m.rng.IntN(len(ids))] }

// observe records what the leader's high watermark commits and checks the
// leader holds every committed batch.
func (m *epochModel) observe(step int) {
	m.t.Helper()
	log := m.c.nodes[m.c.leader].logs[tpA]
	hw := m.c.leaderPart(tpA).Offsets().HighWater
	_, below := readLogTo(m.t, log, hw)
	for _, b := range below {
		if old, ok := m.committed[b.Base]; ok && old != b {
			m.t.Fatalf("step %d: committed batch %v is now %v on leader %d", step, old, b, m.c.leader)
		}
		m.committed[b.Base] = b
	}
	_, all := readLog(m.t, log)
	m.holdsCommitted(fmt.Sprintf("step %d: leader %d (epoch %d)", step, m.c.leader, m.c.epoch), all)
}

// crash stops a broker and checks its log, now still, holds every
// committed batch. A leader may also lose the records of its current epoch
// no follower had reported holding (they were never flushed): they were
// never committed, and the others must not depend on them.
func (m *epochModel) crash(id int32) {
	m.t.Helper()
	n := m.c.nodes[id]
	n.m.Close() // nothing more is written; the log is still open
	_, batches := readLog(m.t, n.logs[tpA])
	m.holdsCommitted(fmt.Sprintf("broker %d stopping", id), batches)
	p := n.parts[tpA]
	o := p.Offsets()
	m.lastHW[id] = o.HighWater
	// Only what this leader wrote in its current epoch and no follower
	// reported may be lost: anything older may have been reported to
	// (and committed by) an earlier leader.
	keep := o.HighWater
	if _, start, ok := p.Log().LeaderEpochs().Latest(); ok {
		keep = max(keep, start)
	}
	for _, f := range p.Followers() {
		keep = max(keep, f.LogEnd)
	}
	m.c.crash(id)
	m.t.Logf("broker %d stopped at %d, high watermark %d", id, o.LogEnd, o.HighWater)
	if id != m.c.leader || keep >= o.LogEnd || m.rng.IntN(3) != 0 {
		return
	}
	cut := keep + m.rng.Int64N(o.LogEnd-keep)
	m.t.Logf("broker %d lost its unreplicated tail from %d", id, cut)
	log, err := storage.OpenLog(n.dirs[tpA], m.c.logCfg, 0, 0, false, slog.New(slog.DiscardHandler))
	if err != nil {
		m.t.Fatal(err)
	}
	if err := log.TruncateTo(cut); err != nil {
		m.t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		m.t.Fatal(err)
	}
}

// restart starts a stopped broker with a high watermark checkpoint from
// any time before it stopped.
func (m *epochModel) restart(id int32) {
	hw := m.rng.Int64N(m.lastHW[id] + 1)
	m.c.start(id, hw)
	m.t.Logf("broker %d restarted with high watermark %d", id, hw)
}

func (m *epochModel) holdsCommitted(who string, batches []batchID) {
	m.t.Helper()
	for _, b := range m.committed {
		if !slices.Contains(batches, b) {
			m.t.Fatalf("%s lacks committed batch %v; holds %v", who, b, batches)
		}
	}
}
