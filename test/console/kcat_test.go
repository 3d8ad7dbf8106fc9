package console

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-project/weir/test/harness"
)

// A second client's data in the console: records kcat (librdkafka)
// produced, with a key, headers and a JSON value, show in the message
// browser as kcat sent them; a group kcat consumed with and committed
// for shows in the groups list and on its page with its committed
// offset and lag.
func TestConsoleShowsKcatData(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed (make deps installs it)")
	}
	b, base := startConsole(t)
	ctx := harness.Ctx(t, time.Minute)
	adm := kadm.NewClient(b.Client())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "kcat-orders"); err != nil {
		t.Fatalf("create: %v", err)
	}
	// Three records, key and value split at '|', each with two headers.
	in := `k1|{"order":1,"item":"tea"}` + "\n" + `k2|{"order":2,"item":"jam"}` + "\n" + `k3|plain text` + "\n"
	kcat := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("kcat", append([]string{"-b", b.Addr}, args...)...)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	kcat("-P", "-t", "kcat-orders", "-p", "0", "-K", "|", "-H", "trace-id=rd-42", "-H", "source=kcat",
		"-X", "topic.request.required.acks=-1")
	// A balanced consumer of group kcat-group reads two records and
	// commits on the way out (librdkafka commits the consumed offsets
	// at close).
	kcat("-G", "kcat-group", "-c", "2", "-e", "-q", "-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", "kcat-orders")
	harness.WaitFor(t, 30*time.Second, "kcat-group's commit", func() bool {
		os, err := adm.FetchOffsets(ctx, "kcat-group")
		if err != nil {
			return false
		}
		o, ok := os.Lookup("kcat-orders", 0)
		return ok && o.At == 2
	})

	br := newBrowser(t)
	br.open(base + "/topics/kcat-orders/messages?partition=0&from=offset&offset=0&limit=10")
	if n := eval[int](br, `document.querySelectorAll("#records tr.record").length`); n != 3 {
		t.Fatalf("%d records shown, want kcat's 3", n)
	}
	first := `#records tr.record[data-offset="0"]`
	if got := br.text(first + " .key"); got != "k1" {
		t.Errorf("key %q, want k1", got)
	}
	if got := br.text(first + " .value"); !strings.Contains(got, `"item": "tea"`) {
		t.Errorf("value %q is not kcat's JSON shown indented", got)
	}
	if got := br.text(first + " .headers"); !strings.Contains(got, "trace-id: rd-42") || !strings.Contains(got, "source: kcat") {
		t.Errorf("headers %q, want kcat's trace-id and source", got)
	}
	if got := br.text(`#records tr.record[data-offset="2"] .value`); got != "plain text" {
		t.Errorf("text value %q", got)
	}

	br.open(base + "/groups")
	if got := br.text("#groups tbody"); !regexp.MustCompile(`kcat-group`).MatchString(got) {
		t.Errorf("groups list %q: no kcat-group", got)
	}
	br.open(base + "/groups/kcat-group")
	cells := eval[string](br, `Array.from(document.querySelectorAll("#lag tbody tr:first-child td")).map(td => td.textContent.trim()).join("|")`)
	if !strings.HasPrefix(cells, "kcat-orders/0|2|0|3|1|") {
		t.Errorf("kcat-group's offsets %q, want committed 2, log 0..3, lag 1", cells)
	}
	if got := br.text("#total-lag"); got != "1" {
		t.Errorf("total lag %s, want 1", got)
	}
}
