package console

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// partitionCount is topic's partition count in the Metadata a new
// franz-go client gets (a new client: kgo caches metadata).
func partitionCount(t *testing.T, b *harness.Broker, topic string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("Metadata %s: %v", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		t.Fatalf("Metadata %s: %v", topic, td.Err)
	}
	return len(td.Partitions)
}

func partitionsForm(count string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.SetValue(chromedp.CSS(`#add-partitions input[name=count]`), count),
		chromedp.Click(chromedp.CSS(`#add-partitions button`)),
	}
}

// From the topic page a topic grows to the partition count asked for,
// after a confirmation, and a Kafka client's metadata then has them;
// fewer partitions than it has is refused with Kafka's
// INVALID_PARTITIONS, shown, and nothing changes.
func TestConsolePartitions(t *testing.T) {
	b, base := startConsole(t)
	seed(t, b) // orders: 3 partitions
	br := newBrowser(t)

	br.open(base + "/topics/orders")
	if got := eval[string](br, `document.querySelector("#add-partitions input[name=count]").value`); got != "3" {
		t.Errorf("the partition count field starts at %q, want the topic's 3", got)
	}
	br.submit("increase form", partitionsForm("5")...)
	if got := br.text("#question"); !strings.Contains(got, "from 3 to 5 partitions") {
		t.Fatalf("increase asked %q", got)
	}
	if n := partitionCount(t, b, "orders"); n != 3 {
		t.Fatalf("orders has %d partitions before the confirmation, want 3", n)
	}
	br.submit("confirm increase", chromedp.Click(chromedp.CSS("#confirm")))
	if got := br.text("#flash"); !strings.Contains(got, "5 partitions") {
		t.Errorf("after the increase the page says %q", got)
	}
	if n := partitionCount(t, b, "orders"); n != 5 {
		t.Fatalf("after the increase a client sees %d partitions of orders, want 5", n)
	}
	if n := eval[int](br, `document.querySelectorAll("#partitions tbody tr").length`); n != 5 {
		t.Errorf("the topic page shows %d partitions after the increase, want 5", n)
	}

	br.submitStatus("decrease form", http.StatusBadRequest, partitionsForm("2")...)
	if got := br.text("#error"); !strings.Contains(got, "INVALID_PARTITIONS") || !strings.Contains(got, "5 partitions") || strings.Contains(got, "below 1") {
		t.Errorf("decreasing says %q, want INVALID_PARTITIONS and the current count", got)
	}
	if n := eval[int](br, `document.querySelectorAll("#confirm").length`); n != 0 {
		t.Error("a refused decrease still asks for a confirmation")
	}
	if n := partitionCount(t, b, "orders"); n != 5 {
		t.Fatalf("after the refused decrease orders has %d partitions, want 5", n)
	}
}
