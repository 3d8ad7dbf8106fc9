package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-project/weir/test/harness"
)

// Every page renders, with the cluster's data, and logs no error in
// Chromium (the CSP forbids inline scripts and styles, so a violation
// would show here too).
func TestConsolePages(t *testing.T) {
	b, base := startConsole(t)
	s := seed(t, b)
	consumeAll(t, b, "billing", s.produced, true)
	br := newBrowser(t)

	// The records seed wrote and consumeAll read are in the graph.
	waitTraffic(t, br, base)
	if got := br.text("#n-topics"); got != "3" { // orders, audit, __consumer_offsets
		t.Errorf("overview: %s topics, want 3", got)
	}
	if got := br.text("#brokers tbody"); !strings.Contains(got, b.Addr) || !strings.Contains(got, "controller") {
		t.Errorf("overview brokers table %q: no %s controller", got, b.Addr)
	}
	if got := br.text(`#brokers tr[data-id="1"] .fenced`); got != "no" {
		t.Errorf("overview: broker 1's fenced column %q, want no", got)
	}
	if os.Getenv("WEIR_CONSOLE_SCREENSHOTS") != "" {
		moreTraffic(t, b, br, base, 12) // a graph with a shape to show
	}
	br.screenshot("overview")

	br.open(base + "/topics")
	row := br.text(`#topics tbody`)
	if !regexp.MustCompile(`orders\s*3\s*1\s*[0-9.]+ [KMG]?i?B\s*1 d`).MatchString(row) {
		t.Errorf("topics list: no row orders 3 partitions, RF 1, a size, 1 d retention in %q", row)
	}
	br.screenshot("topics")

	br.open(base + "/topics/orders")
	if n := eval[int](br, `document.querySelectorAll("#partitions tbody tr").length`); n != 3 {
		t.Errorf("topic page: %d partition rows, want 3", n)
	}
	if got := br.text("#partitions tbody tr:first-child"); !regexp.MustCompile(`^0\s*1\s*\d+\s*1\s*1\s*0\s*3`).MatchString(got) {
		t.Errorf("partition 0 row %q: want leader 1, replicas 1, ISR 1, log 0 to 3", got)
	}
	if got := br.text("#partitions tbody tr:first-child td:last-child"); !regexp.MustCompile(`^[0-9.]+ [KMG]?i?B$`).MatchString(got) || got == "0 B" {
		t.Errorf("partition 0's size on its leader: %q", got)
	}
	if got := br.text("#configs"); !strings.Contains(got, "retention.ms") || !strings.Contains(got, "86400000") {
		t.Errorf("configs table lacks retention.ms=86400000")
	}
	br.screenshot("topic")

	br.open(base + "/topics/orders/messages?partition=0")
	br.screenshot("messages")

	br.open(base + "/groups")
	if got := br.text("#groups tbody"); !regexp.MustCompile(`billing\s*Stable`).MatchString(got) {
		t.Errorf("groups list %q: no Stable group billing", got)
	}
	br.screenshot("groups")

	br.open(base + "/groups/billing")
	if got := br.text("#members"); !strings.Contains(got, "test-billing") || !strings.Contains(got, "orders: ") {
		t.Errorf("group members %q: no member test-billing assigned orders", got)
	}
	if got := br.text("#total-lag"); got != "0" {
		t.Errorf("group lag %s, want 0", got)
	}
	br.screenshot("group")
}

// The message browser shows a record's key, JSON value (indented),
// headers and timestamp; a value holding markup is shown as its text,
// and nothing of it runs or becomes an element.
func TestConsoleMessageBrowser(t *testing.T) {
	b, base := startConsole(t)
	seed(t, b)
	br := newBrowser(t)

	br.open(base + "/topics/orders/messages?partition=0&from=offset&offset=0&limit=10")
	if n := eval[int](br, `document.querySelectorAll("#records tr.record").length`); n != 3 {
		t.Fatalf("%d records shown, want the partition's 3", n)
	}
	first := `#records tr.record[data-offset="0"]`
	if got := br.text(first + " .key"); got != "order-1" {
		t.Errorf("key %q", got)
	}
	if got := eval[string](br, `document.querySelector('`+first+` .value pre').className`); got != "json" {
		t.Errorf("value shown as %q, want json", got)
	}
	if got := br.text(first + " .value"); !strings.Contains(got, `"item": "tea"`) {
		t.Errorf("JSON value %q is not indented JSON with item tea", got)
	}
	if got := br.text(first + " .headers"); !strings.Contains(got, "trace-id: abc123") || !strings.Contains(got, "source: web") {
		t.Errorf("headers %q", got)
	}
	if got := br.text(first + " .ts"); got != "2023-11-14 22:13:20.000 UTC" {
		t.Errorf("timestamp %q", got)
	}
	evil := `#records tr.record[data-offset="1"] .value`
	if got := br.text(evil); got != scriptValue {
		t.Errorf("script value shown as %q, want its text %q", got, scriptValue)
	}
	if n := eval[int](br, `document.querySelectorAll("#records script, #records img").length`); n != 0 {
		t.Errorf("the record value made %d elements", n)
	}
	if pwned := eval[bool](br, `window.__pwned !== undefined || document.title === "pwned"`); pwned {
		t.Error("the record value's script ran")
	}
	if got := br.text(`#records tr.record[data-offset="2"] .value`); got != "00ff1080" {
		t.Errorf("binary value %q, want hex 00ff1080", got)
	}

	// Bounded: a limit of 1 reads one record and links to the next.
	br.open(base + "/topics/orders/messages?partition=0&from=offset&offset=1&limit=1&format=hex")
	if n := eval[int](br, `document.querySelectorAll("#records tr.record").length`); n != 1 {
		t.Errorf("limit=1 showed %d records", n)
	}
	if href := eval[string](br, `document.querySelector("#next").getAttribute("href")`); !strings.Contains(href, "offset=2") {
		t.Errorf("next link %q", href)
	}
	// By timestamp: the first record is older than everything else.
	br.open(base + "/topics/orders/messages?partition=0&from=timestamp&ts=2023-11-14T22:13:21&limit=5")
	if got := eval[string](br, `document.querySelector("#records tr.record").dataset.offset`); got != "1" {
		t.Errorf("from a timestamp after the first record: first offset shown %s, want 1", got)
	}
}

// resetForm fills the group page's reset form: orders/0 to offset 1.
func resetForm() []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.SetValue(chromedp.CSS(`#reset-form select[name=topic]`), "orders"),
		chromedp.SetValue(chromedp.CSS(`#reset-form input[name=partition]`), "0"),
		chromedp.SetValue(chromedp.CSS(`#reset-form select[name=to]`), "offset"),
		chromedp.SetValue(chromedp.CSS(`#reset-form input[name=offset]`), "1"),
		chromedp.Click(chromedp.CSS(`#reset-form button`)),
	}
}

// An offset reset from the group page, confirmed, is what the group's
// next consumer starts from; a group with a live member refuses it, as
// Kafka's does.
func TestConsoleResetOffsets(t *testing.T) {
	b, base := startConsole(t)
	s := seed(t, b)
	consumeAll(t, b, "billing", s.produced, false)
	consumeAll(t, b, "live", s.produced, true)
	if got := committed(t, s.adm, "billing", 0); got != 3 {
		t.Fatalf("billing committed %d on orders/0 before the reset, want 3", got)
	}
	br := newBrowser(t)

	br.open(base + "/groups/live")
	br.submit("reset form of live", resetForm()...)
	br.submitStatus("confirm reset of live", http.StatusConflict, chromedp.Click(chromedp.CSS("#confirm-reset")))
	if got := br.text("#error"); !strings.Contains(got, "active members") {
		t.Errorf("the refused reset says %q", got)
	}
	if got := committed(t, s.adm, "live", 0); got != 3 {
		t.Fatalf("a refused reset moved live's commit to %d", got)
	}

	br.open(base + "/groups/billing")
	br.submit("reset form", resetForm()...)
	if got := br.text("#reset-plan tbody"); !regexp.MustCompile(`^orders/0\s*3\s*1\s*$`).MatchString(got) {
		t.Fatalf("reset plan %q: want orders/0 from 3 to 1", got)
	}
	if got := committed(t, s.adm, "billing", 0); got != 3 {
		t.Fatalf("the plan alone moved the commit to %d", got)
	}
	br.submit("confirm reset", chromedp.Click(chromedp.CSS("#confirm-reset")))
	if got := br.text("#flash"); !strings.Contains(got, "reset") {
		t.Errorf("after the reset the page says %q", got)
	}
	if got := committed(t, s.adm, "billing", 0); got != 1 {
		t.Fatalf("after the reset billing committed %d on orders/0, want 1", got)
	}
	if got := committed(t, s.adm, "billing", 1); got != 6 {
		t.Errorf("the reset of orders/0 moved orders/1 to %d", got)
	}

	// A consumer of the group starts at offset 1 of partition 0.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := harness.Ctx(t, time.Minute)
	var got []int64
	for len(got) < 2 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if r.Partition == 0 {
				got = append(got, r.Offset)
			}
		})
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("after the reset the group's consumer read offsets %v of orders/0, want [1 2]", got)
	}
}

// State-changing requests need the CSRF token of the browser's cookie:
// without it, or with another's, 403 and nothing changes. Through the
// pages (which carry it) a topic is created, a config edited, and the
// topic deleted after its confirmation step.
func TestConsoleCSRFAndTopicActions(t *testing.T) {
	b, base := startConsole(t)
	s := seed(t, b)
	// A client of its own for each look: kgo answers a repeated
	// Metadata request from its cache for a few seconds.
	topics := func() map[string]bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		td, err := kadm.NewClient(cl).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for n := range td {
			out[n] = true
		}
		return out
	}

	post := func(c *http.Client, path string, form url.Values) int {
		resp, err := c.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	plain := &http.Client{Timeout: 30 * time.Second}
	if code := post(plain, "/topics", url.Values{"name": {"forged"}, "partitions": {"1"}}); code != http.StatusForbidden {
		t.Errorf("create without a token: HTTP %d, want 403", code)
	}
	if code := post(plain, "/topics/orders/delete", url.Values{"confirm": {"yes"}}); code != http.StatusForbidden {
		t.Errorf("delete without a token: HTTP %d, want 403", code)
	}
	// A cookie of its own and a token taken from another browser's page.
	jar, _ := cookiejar.New(nil)
	withCookie := &http.Client{Timeout: 30 * time.Second, Jar: jar}
	resp, err := withCookie.Get(base + "/topics")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	other := &http.Client{Timeout: 30 * time.Second}
	resp, err = other.Get(base + "/topics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no csrf field on the topics page")
	}
	if code := post(withCookie, "/topics", url.Values{"name": {"forged"}, "partitions": {"1"}, "csrf": {string(m[1])}}); code != http.StatusForbidden {
		t.Errorf("create with another browser's token: HTTP %d, want 403", code)
	}
	// A page of another site whose name resolves to loopback (DNS
	// rebinding) would be same-origin with the console: its Host header
	// gives it away.
	req, _ := http.NewRequest("GET", base+"/topics", nil)
	req.Host = "rebound.example:80"
	if resp, err := plain.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host rebound.example: HTTP %d, want 421", resp.StatusCode)
		}
	}
	if ts := topics(); ts["forged"] || !ts["orders"] {
		t.Fatalf("refused requests changed the topics: %v", ts)
	}

	br := newBrowser(t)
	br.open(base + "/topics")
	br.submit("create topic",
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name=name]`), "made-in-console"),
		chromedp.SetValue(chromedp.CSS(`#create-topic input[name=partitions]`), "2"),
		chromedp.SetValue(chromedp.CSS(`#create-topic textarea[name=configs]`), "cleanup.policy=compact"),
		chromedp.Click(chromedp.CSS(`#create-topic button`)),
	)
	if !topics()["made-in-console"] {
		t.Fatal("the create form made no topic")
	}
	if n := eval[int](br, `document.querySelectorAll("#partitions tbody tr").length`); n != 2 {
		t.Errorf("the new topic's page shows %d partitions, want 2", n)
	}
	br.submit("edit config",
		chromedp.SetValue(chromedp.CSS(`#edit-config input[name=key]`), "retention.ms"),
		chromedp.SetValue(chromedp.CSS(`#edit-config input[name=value]`), "3600000"),
		chromedp.Click(chromedp.CSS(`#edit-config button`)),
	)
	ctx := harness.Ctx(t, 30*time.Second)
	rcs, err := s.adm.DescribeTopicConfigs(ctx, "made-in-console")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rcs[0].Configs {
		if c.Key == "retention.ms" && c.Value != nil && *c.Value == "3600000" {
			found = true
		}
	}
	if !found {
		t.Error("the config form did not set retention.ms=3600000")
	}
	br.submit("delete topic", chromedp.Click(chromedp.CSS(`#delete-topic button`)))
	if got := br.text("#question"); !strings.Contains(got, "made-in-console") {
		t.Fatalf("delete asked %q", got)
	}
	if !topics()["made-in-console"] {
		t.Fatal("the topic went before the delete was confirmed")
	}
	br.submit("confirm delete", chromedp.Click(chromedp.CSS("#confirm")))
	harness.WaitFor(t, 30*time.Second, "made-in-console deleted", func() bool { return !topics()["made-in-console"] })
}
