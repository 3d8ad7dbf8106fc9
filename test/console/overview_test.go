package console

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/test/harness"
)

// fencedBy is whether broker id is registered and fenced, as
// DescribeCluster with IncludeFencedBrokers on b says (false, false if
// it is not registered or b does not answer).
func fencedBy(b *harness.Broker, id int32) (fenced, registered bool) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		return false, false
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return false, false
	}
	for _, br := range resp.Brokers {
		if br.NodeID == id {
			return br.IsFenced, true
		}
	}
	return false, false
}

// A broker the controller has fenced (killed: its heartbeats stop) is
// not in Metadata's broker list, but the overview lists it, marked
// fenced, from DescribeCluster.
func TestConsoleFencedBroker(t *testing.T) {
	c := harness.StartCluster(t, 1, consoleOn)
	n1 := c.Node(1)
	n2 := c.AddBrokerOnly()
	base := consoleURL(t, n1)
	harness.WaitFor(t, time.Minute, "broker 2 registered and unfenced", func() bool {
		fenced, registered := fencedBy(n1, 2)
		return registered && !fenced
	})
	br := newBrowser(t)
	br.open(base + "/")
	if got := br.text("#n-brokers"); got != "2" {
		t.Errorf("overview: %s brokers, want 2", got)
	}
	if got := br.text(`#brokers tr[data-id="2"] .fenced`); got != "no" {
		t.Errorf("broker 2 live: fenced column %q, want no", got)
	}

	n2.Kill()
	harness.WaitFor(t, time.Minute, "broker 2 fenced by the controller", func() bool {
		fenced, _ := fencedBy(n1, 2)
		return fenced
	})
	br.open(base + "/")
	if got := br.text("#n-brokers"); got != "2" {
		t.Errorf("overview with broker 2 fenced: %s brokers, want 2", got)
	}
	if got := br.text(`#brokers tr[data-id="2"] .fenced .tag`); got != "fenced" {
		t.Errorf("broker 2's fenced column %q, want a fenced mark", got)
	}
	if got := br.text(`#brokers tr[data-id="2"]`); !strings.Contains(got, n2.Addr) {
		t.Errorf("fenced broker 2's row %q lacks its endpoint %s", got, n2.Addr)
	}
	if got := br.text(`#brokers tr[data-id="1"] .fenced`); got != "no" {
		t.Errorf("broker 1's fenced column %q, want no", got)
	}
	if got := br.text("#n-fenced"); got != "1" {
		t.Errorf("fenced card %q, want 1", got)
	}
}

// sparkPoints is how many points the sparkline's line of class cls has,
// and their lowest y (the highest rate); a rate of 0 is at the bottom.
func sparkPoints(br *browser, cls string) (n int, minY float64) {
	pts := eval[string](br, `document.querySelector("#throughput polyline.`+cls+`")?.getAttribute("points") ?? ""`)
	minY = 1e9
	for _, p := range strings.Fields(pts) {
		_, y, _ := strings.Cut(p, ",")
		v, err := strconv.ParseFloat(y, 64)
		if err != nil {
			br.t.Fatalf("sparkline point %q", p)
		}
		n++
		minY = min(minY, v)
	}
	return n, minY
}

// svgBottom is the y of a zero rate: the box's height less its padding.
func svgBottom(br *browser) float64 {
	h := eval[float64](br, `Number(document.querySelector("#throughput svg").getAttribute("height"))`)
	return h - 4
}

// waitTraffic reloads the overview until its sparkline shows bytes in
// and out (at least two points of each, one above zero): the console
// samples its broker's counters every 2 s.
func waitTraffic(t *testing.T, br *browser, base string) {
	t.Helper()
	harness.WaitFor(t, time.Minute, "the throughput sparkline to show bytes in and out", func() bool {
		br.open(base + "/")
		nIn, yIn := sparkPoints(br, "in")
		nOut, yOut := sparkPoints(br, "out")
		bottom := svgBottom(br)
		return nIn >= 2 && nOut >= 2 && yIn < bottom && yOut < bottom
	})
}

// After records are produced and consumed, the overview's throughput
// graph is an inline SVG whose in and out lines rise above zero, and its
// caption gives the rates.
func TestConsoleThroughput(t *testing.T) {
	b, base := startConsole(t)
	br := newBrowser(t)
	br.open(base + "/")
	if n := eval[int](br, `document.querySelectorAll("#throughput svg").length`); n != 1 {
		t.Fatalf("overview: %d throughput graphs, want 1", n)
	}
	s := seed(t, b)
	consumeAll(t, b, "billing", s.produced, false)
	waitTraffic(t, br, base)
	if got := br.text("#throughput figcaption"); !strings.Contains(got, "broker 1") || !strings.Contains(got, "peak") {
		t.Errorf("throughput caption %q", got)
	}
	if n := eval[int](br, `document.querySelectorAll("script").length`); n != 0 {
		t.Errorf("the overview has %d scripts, want none", n)
	}
}

// moreTraffic produces and reads back records of topic audit in rounds
// of varying size, each round once the sparkline has gained a point.
func moreTraffic(t *testing.T, b *harness.Broker, br *browser, base string, rounds int) {
	t.Helper()
	ctx := harness.Ctx(t, 2*time.Minute)
	cl := b.Client()
	value := []byte(strings.Repeat("x", 400))
	total := 0
	for i := range rounds {
		n, _ := sparkPoints(br, "in")
		count := 10 + 30*(i%4) + 5*i
		var recs []*kgo.Record
		for range count {
			recs = append(recs, &kgo.Record{Topic: "audit", Value: value})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		total += count
		consumer := b.Client(kgo.ConsumeTopics("audit"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for read := 0; read < total+1; { // audit starts with seed's one record
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records of audit: %v", read, total+1, ctx.Err())
			}
			read += fs.NumRecords()
		}
		consumer.Close()
		harness.WaitFor(t, time.Minute, "a new point in the sparkline", func() bool {
			br.open(base + "/")
			m, _ := sparkPoints(br, "in")
			return m > n
		})
	}
}
