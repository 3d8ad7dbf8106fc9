package console

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The overview's throughput graph: record bytes in and out per second
// over the last few minutes.
//
// Its source is the broker's own byte counters (Config.Traffic: cmd/weir
// hands in broker.Traffic, counted at the same produce and fetch events
// as the metrics' BytesInPerSec and BytesOutPerSec), read at a fixed
// interval into a bounded ring. The cluster as a Kafka client sees it
// would be the other choice, and a worse one: log end offsets count
// records, not bytes; DescribeLogDirs sizes count a byte once per replica
// and drop at every retention deletion or compaction; neither sees bytes
// out at all; and each sample would be a request over every partition
// (with 10,000 partitions, responses of 10,000 entries from each broker
// every few seconds, for a graph nobody may be looking at). A counter
// sample is two atomic loads whatever the number of partitions, and the
// ring is a fixed 151 samples. The price is that the figure is this
// broker's share (appends to the partitions it leads, fetches of its
// consumers), which is the whole cluster's on a single node; the page
// says which broker it is.

const (
	// trafficInterval is how often the counters are read.
	trafficInterval = 2 * time.Second
	// trafficSamples is how many samples the ring keeps: 150 intervals,
	// 5 minutes.
	trafficSamples = 151
)

// trafficSample is the counters' totals at one moment.
type trafficSample struct {
	at      time.Time
	in, out int64
}

// ring keeps the newest samples, a fixed number of them.
type ring struct {
	mu   sync.Mutex
	buf  []trafficSample
	next int // where the next sample goes
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]trafficSample, n)} }

func (r *ring) add(s trafficSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// samples is a copy of the samples, oldest first.
func (r *ring) samples() []trafficSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]trafficSample(nil), r.buf[:r.next]...)
	}
	return append(append([]trafficSample(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// sampleTraffic reads the counters now and then every trafficInterval
// until ctx ends.
func (s *Server) sampleTraffic(ctx context.Context) {
	read := func() {
		in, out := s.cfg.Traffic()
		s.traffic.add(trafficSample{at: time.Now(), in: in, out: out})
	}
	read()
	t := time.NewTicker(trafficInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			read()
		}
	}
}

// rate is bytes per second in and out between two samples.
type rate struct{ in, out float64 }

// rates are the rates between consecutive samples. A total that went
// down (it cannot within one process) counts as 0, not as negative.
func rates(ss []trafficSample) []rate {
	var out []rate
	for i := 1; i < len(ss); i++ {
		dt := ss[i].at.Sub(ss[i-1].at).Seconds()
		if dt <= 0 {
			continue
		}
		out = append(out, rate{in: max(0, float64(ss[i].in-ss[i-1].in)/dt), out: max(0, float64(ss[i].out-ss[i-1].out)/dt)})
	}
	return out
}

// sparkline is what the overview's "sparkline" template draws: two
// polylines in a Width x Height box, the newest rate at the right edge
// and one slot per interval, so the graph fills from the right.
type sparkline struct {
	Width, Height int
	Label         string // the graph's title (what and whose)
	Window        string // the span a full graph covers, e.g. "5 min"
	Points        int    // rates drawn (0: nothing yet)
	In, Out       string // polyline points, "x,y x,y ..."
	InX, InY      string // the newest point of each, marked with a dot
	OutX, OutY    string
	Top           float64 // bytes/s at the top of the box
	NowIn, NowOut float64 // the newest rates
	PeakIn        float64
	PeakOut       float64
}

const (
	sparkWidth  = 600
	sparkHeight = 80
	sparkPad    = 4 // keeps a dot at an edge whole
)

// newSparkline lays out rs (oldest first) for a ring of slots+1 samples.
func newSparkline(label string, rs []rate, slots int) sparkline {
	sp := sparkline{Width: sparkWidth, Height: sparkHeight, Label: label, Window: windowText(time.Duration(slots) * trafficInterval)}
	if len(rs) > slots {
		rs = rs[len(rs)-slots:]
	}
	sp.Points = len(rs)
	if len(rs) == 0 {
		return sp
	}
	for _, r := range rs {
		sp.PeakIn, sp.PeakOut = max(sp.PeakIn, r.in), max(sp.PeakOut, r.out)
	}
	sp.Top = max(sp.PeakIn, sp.PeakOut, 1) // an idle broker: a flat line at the bottom
	sp.NowIn, sp.NowOut = rs[len(rs)-1].in, rs[len(rs)-1].out
	right, step := float64(sparkWidth-sparkPad), 0.0
	if slots > 1 {
		step = float64(sparkWidth-2*sparkPad) / float64(slots-1)
	}
	var in, out strings.Builder
	for i, r := range rs {
		x := coord(right - float64(len(rs)-1-i)*step)
		yi, yo := coord(sp.y(r.in)), coord(sp.y(r.out))
		if i > 0 {
			in.WriteByte(' ')
			out.WriteByte(' ')
		}
		in.WriteString(x + "," + yi)
		out.WriteString(x + "," + yo)
		sp.InX, sp.InY, sp.OutX, sp.OutY = x, yi, x, yo
	}
	sp.In, sp.Out = in.String(), out.String()
	return sp
}

// y is v's height in the box: 0 at the bottom, Top at the top.
func (sp sparkline) y(v float64) float64 {
	return float64(sparkHeight-sparkPad) - v/sp.Top*float64(sparkHeight-2*sparkPad)
}

func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func windowText(d time.Duration) string {
	if d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return strconv.Itoa(int(d/time.Second)) + " s"
}

// humanRate is bytes per second as people read it.
func humanRate(v float64) string { return humanBytes(int64(v+0.5)) + "/s" }
