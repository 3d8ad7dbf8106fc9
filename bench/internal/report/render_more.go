package report

import (
	"fmt"
	"time"

	"github.com/weir-project/weir/bench/internal/stats"
)

func renderLatency(p printer, r *Run) {
	if len(r.Latency) == 0 {
		return
	}
	p("## End-to-end latency at half of peak")
	p("")
	p("One partition, acks=1, one producer with no linger and a consumer in the same process. Latency is from the send call " +
		"to the consumer's poll returning the record; the first half second is warm-up. Each broker is driven at half of " +
		"two peaks: its own median in the 1 KiB, 1 partition, 1 producer, acks=1 produce case (no consumer running), and " +
		"the end-to-end rate producer, broker and consumer sustained together in one unpaced run of this case (\"e2e\").")
	p("")
	p("Received is the rate the consumer got records at: below the target rate, the client (on a loaded machine) or the " +
		"broker could not keep up and the latency is queueing. weir's own p99s come from its /metrics over the same round: " +
		"Produce from request read to response written, and consumer Fetch handling with the long-poll wait left out " +
		"(LocalTime); they tell the broker's part from the clients'. The rows at 1,000 records/s show each broker's " +
		"latency when nothing is near its limit.")
	p("")
	p("The rows marked minimal client run weir and kfake again at the same rates with the suite's minimal client: " +
		"a producer that sends whatever is due at once whenever fewer than five Produce requests are in flight " +
		"(records due meanwhile go together in the next one), and a consumer on a second connection with one Fetch in flight " +
		"(at least one byte, at most 500 ms of waiting), which stamps each record when its response has been read and " +
		"CRC-checked. franz-go's own producer, against a sink broker that answers at once, has a p99 of tens of " +
		"milliseconds at these rates on this machine, so its rows measure the client as much as the broker.")
	p("")
	p("The stall probe is a goroutine of the client's process that sleeps 200 us in a loop during each run: how much " +
		"later than asked it woke is how long the machine kept a ready goroutine from running, a stall that producer, " +
		"broker and consumer share. No broker's p99 can be far below the probe's tail.")
	p("")
	table(p, []string{"Broker", "Target rate records/s (MB/s)", "Of peak MB/s", "Received records/s", "p50 ms", "p99 ms", "p99.9 ms",
		"Broker Produce p99 ms", "Broker Fetch p99 ms", "Stall probe p99.9 ms", "Stall probe max ms", "Samples per round"}, func(row func(...string)) {
		for _, l := range r.Latency {
			var p50, p99, p999, bp, bf, sp, sm []time.Duration
			var got []float64
			n := 0
			for _, rd := range l.Rounds {
				p50, p99, p999 = append(p50, rd.P50), append(p99, rd.P99), append(p999, rd.P999)
				if rd.BrokerProduceP99 > 0 {
					bp = append(bp, rd.BrokerProduceP99)
				}
				if rd.BrokerFetchP99 > 0 {
					bf = append(bf, rd.BrokerFetchP99)
				}
				if rd.StallMax > 0 {
					sp, sm = append(sp, rd.StallP999), append(sm, rd.StallMax)
				}
				got = append(got, rd.Received)
				n = rd.N
			}
			peak := num(l.PeakMBps)
			switch {
			case l.PeakMBps == 0:
				peak = "fixed rate"
			case l.EndToEnd:
				peak += " (e2e)"
			}
			own := func(ds []time.Duration) string {
				if len(ds) == 0 {
					return "—"
				}
				return spread(durSummary(ds))
			}
			row(l.Label(), fmt.Sprintf("%.0f (%s)", l.Rate, num(l.Rate*float64(l.RecordSize)/1e6)), peak, spread(stats.Summarize(got)),
				spread(durSummary(p50)), spread(durSummary(p99)), spread(durSummary(p999)), own(bp), own(bf), own(sp), own(sm), fmt.Sprint(n))
		}
	})
	p("")
	renderWriteLatency(p, r.WriteLatency)
}

// renderWriteLatency shows the page cache's own latency at weir's rate.
func renderWriteLatency(p printer, wl *WriteLatency) {
	if wl == nil || len(wl.Rounds) == 0 {
		return
	}
	p("Limit: a file appended to at weir's e2e rate (%s MB/s) in writes of %d KiB, one round before each latency round, "+
		"with no broker or client busy. One acks=1 produce round trip includes one such write into the page cache, "+
		"and with one Produce in flight every record sent meanwhile waits for it, so the write's own tail is a floor "+
		"under any broker's p99 here.", num(wl.MBps), wl.Chunk>>10)
	p("")
	var p50, p99, p999 []time.Duration
	for _, rd := range wl.Rounds {
		p50, p99, p999 = append(p50, rd.P50), append(p99, rd.P99), append(p999, rd.P999)
	}
	table(p, []string{"Write of", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "Writes per round"}, func(row func(...string)) {
		row(fmt.Sprintf("%d KiB", wl.Chunk>>10), spread(durSummary(p50)), spread(durSummary(p99)), spread(durSummary(p999)),
			spread(durSummary(wl.Max)), fmt.Sprint(wl.Rounds[0].N))
	})
	p("")
}

func renderSustained(p printer, r *Run) {
	s := r.Sustain
	if s == nil {
		return
	}
	p("## Sustained produce and the disk")
	p("")
	p("%s, %s records, %d partitions, acks=1, one producer, for %v: %s MB/s over the run, %s GB written. "+
		"The disk's own sustained write bandwidth (a file written and fsynced) is %s MB/s. The kernel lets about %s GiB of "+
		"dirty page cache build up (vm.dirty_ratio of available memory) before writers are made to wait for the disk.",
		s.Peer, SizeLabel(s.RecordSize), s.Partitions, s.Duration, num(s.MBps), num(s.WrittenGB), num(s.DiskMBps), num(s.DirtyLimitGiB))
	p("")
	if s.MBps > s.DiskMBps && s.DiskMBps > 0 {
		fill := s.DirtyLimitGiB * (1 << 30) / 1e6 / (s.MBps - s.DiskMBps)
		p("Producing at %s MB/s while the disk drains %s MB/s, the dirty limit is reached after about %s s (%s GB produced); "+
			"from then on the disk's bandwidth, not the broker, is the limit of sustained produce. "+
			"A run longer than that is impractical on this shared machine (it would write tens of GB and stall everyone's I/O), "+
			"so this bounded run shows the approach and the figures give where it ends.",
			num(s.MBps), num(s.DiskMBps), num(fill), num(fill*s.MBps/1e3))
	} else if s.DiskMBps > 0 {
		p("Here the broker produced slower than the disk writes, so the disk kept up and the page cache never filled: "+
			"disk bandwidth is not yet the limit of sustained produce on this machine. A producer faster than the disk's %s MB/s "+
			"would fill the %s GiB dirty limit after (dirty limit) / (rate − %s MB/s) seconds and be held to the disk's %s MB/s from then on.",
			num(s.DiskMBps), num(s.DirtyLimitGiB), num(s.DiskMBps), num(s.DiskMBps))
	}
	p("")
}

func renderStartup(p printer, r *Run) {
	s := r.Startup
	if s == nil {
		return
	}
	p("## Many partitions on one node")
	p("")
	p("%d partitions in %d topics on one weir node (with max.broker.partitions raised from its default of 4000); "+
		"the node is then stopped (SIGTERM) and started again. Ready is when every partition answers ListOffsets.", s.Partitions, s.Topics)
	p("")
	table(p, []string{"Create (until every leader is known)", "Stop (SIGTERM to exit)", "Restart to \"weir started\"", "Restart to ready", "Idle RSS", "Open fds"}, func(row func(...string)) {
		row(secs(s.Create)+" s", secs(s.Stop)+" s", secs(s.ToStarted)+" s", secs(s.ToReady)+" s", num(float64(s.IdleRSS)/(1<<20))+" MiB", fmt.Sprint(s.FDs))
	})
	p("")
}

func renderRecovery(p printer, r *Run) {
	rc := r.Recovery
	if rc == nil {
		return
	}
	p("## Recovery after kill -9")
	p("")
	p("One weir node, 8 partitions, %s MiB of 1 KiB records produced with acks=1 and nothing flushed "+
		"(no log.flush.interval.*; segments of 1 GiB do not roll), then kill -9 and a restart on the same dir. "+
		"Ready is when every partition answers ListOffsets with the end offset that was acknowledged. "+
		"The segment pages are still in the page cache (the process died, not the machine).", num(float64(rc.Bytes)/(1<<20)))
	p("")
	var loaded, started, ready []time.Duration
	for _, rd := range rc.Rounds {
		loaded, started, ready = append(loaded, rd.ToLogsLoaded), append(started, rd.ToStarted), append(ready, rd.ToReady)
	}
	table(p, []string{"Rounds", "Restart to segments recovered (\"log manager loaded\") ms", "Restart to \"weir started\" ms", "Restart to ready ms"}, func(row func(...string)) {
		row(fmt.Sprint(len(rc.Rounds)), spread(durSummary(loaded)), spread(durSummary(started)), spread(durSummary(ready)))
	})
	p("")
	refused := false
	for _, rd := range rc.Rounds {
		refused = refused || rd.RegistrationRefused
	}
	if s := durSummary(loaded); s.N > 0 && refused {
		if r := durSummary(ready); r.Median-s.Median > 1000 {
			p("Most of the time after the segments are recovered is spent before the node serves: in this run weir's log shows "+
				"the restarted broker's registration refused (DUPLICATE_BROKER_REGISTRATION) until the killed incarnation's "+
				"session expires (broker.session.timeout.ms), %s ms after the segments were recovered.", num(r.Median-s.Median))
			p("")
		}
	}
}
