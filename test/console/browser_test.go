package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weir-project/weir/test/harness"
)

// startConsole starts a broker with its console on a free loopback port
// and returns the console's base URL (no trailing slash).
func startConsole(t *testing.T) (*harness.Broker, string) {
	t.Helper()
	b := harness.StartBroker(t, consoleOn)
	return b, consoleURL(t, b)
}

// consoleOn is the override that serves a console at a free loopback port.
const consoleOn = "console.listener=http://127.0.0.1:0"

// consoleURL is the address b's console logged it listens at.
func consoleURL(t *testing.T, b *harness.Broker) string {
	t.Helper()
	m := regexp.MustCompile(`msg="console listening" url=(http://\S+)/`).FindStringSubmatch(b.Output())
	if m == nil {
		t.Fatalf("no console address in the broker's log:\n%s", b.Output())
	}
	return m[1]
}

// browser is one headless Chromium, its own profile, driven over the
// DevTools protocol; every console message of its page is kept.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	marks    int
}

// The flags keep Chromium off the network and out of any profile but a
// fresh one (the same set test/verify renders its report with).
func chromiumOptions(bin, profile string, cmdp **exec.Cmd) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		// In its own process group, so that every helper process it
		// forks is killed with it.
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			*cmdp = cmd
		}),
	}
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium (scripts/install-test-deps.sh installs Debian's chromium)")
	}
	var cmd *exec.Cmd
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(bin, t.TempDir(), &cmd)...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	br := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		if cmd != nil && cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers it left behind
		}
	})
	// Start the browser, then collect its page's console from the start.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			br.mu.Lock()
			br.messages = append(br.messages, m)
			br.mu.Unlock()
		}
	}()
	return br
}

// settle writes a marker to the console and waits for it: the messages
// come in order, so every message the page wrote before is in by then.
// It returns the errors and exceptions since the last settle.
func (br *browser) settle() []string {
	br.t.Helper()
	br.mu.Lock()
	br.marks++
	mark := fmt.Sprintf("weir-test-mark-%d", br.marks)
	br.mu.Unlock()
	if _, err := chromedp.Run(br.ctx, chromedp.Evaluate[any](`console.debug(`+fmt.Sprintf("%q", mark)+`)`)); err != nil {
		br.t.Fatalf("console marker: %v", err)
	}
	var errs []string
	harness.WaitFor(br.t, 30*time.Second, "the console marker", func() bool {
		br.mu.Lock()
		defer br.mu.Unlock()
		for i, m := range br.messages {
			if m.Text == mark {
				for _, e := range br.messages[:i] {
					if e.Type == chromedp.ConsoleError || e.IsException() {
						errs = append(errs, e.String()+" ("+e.URL+")")
					}
				}
				br.messages = append([]chromedp.ConsoleMessage(nil), br.messages[i+1:]...)
				return true
			}
		}
		return false
	})
	return errs
}

// open loads url and fails the test unless it answered 200 and the page
// logged no error.
func (br *browser) open(url string) {
	br.t.Helper()
	resp, err := chromedp.Run(br.ctx, chromedp.NavigateResponse(url))
	if err != nil {
		br.t.Fatalf("open %s: %v", url, err)
	}
	if resp.Status != 200 {
		br.t.Fatalf("open %s: HTTP %d", url, resp.Status)
	}
	if errs := br.settle(); len(errs) > 0 {
		br.t.Fatalf("console errors on %s:\n%s", url, strings.Join(errs, "\n"))
	}
}

// submit runs actions that load a new page (a form submitted), waits
// for it, and checks its status and console as open does.
func (br *browser) submit(what string, actions ...chromedp.Action[chromedp.Void]) {
	br.t.Helper()
	br.submitStatus(what, 200, actions...)
}

func (br *browser) submitStatus(what string, status int64, actions ...chromedp.Action[chromedp.Void]) {
	br.t.Helper()
	resp, err := chromedp.RunResponse(br.ctx, actions...)
	if err != nil {
		br.t.Fatalf("%s: %v", what, err)
	}
	if resp.Status != status {
		br.t.Fatalf("%s: HTTP %d, want %d", what, resp.Status, status)
	}
	var errs []string
	for _, e := range br.settle() {
		// Chromium logs the expected failed load itself.
		if status != 200 && strings.Contains(e, fmt.Sprintf("status of %d", status)) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		br.t.Fatalf("console errors after %s:\n%s", what, strings.Join(errs, "\n"))
	}
}

// text is the text of the first element sel matches; none fails the
// test at once (the pages are whole when loaded: nothing comes later).
func (br *browser) text(sel string) string {
	br.t.Helper()
	if !eval[bool](br, `document.querySelector(`+fmt.Sprintf("%q", sel)+`) !== null`) {
		br.t.Fatalf("no element %s on the page", sel)
	}
	s, err := chromedp.Run(br.ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		br.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func eval[T any](br *browser, js string) T {
	br.t.Helper()
	v, err := chromedp.Run(br.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		br.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// screenshot saves the whole page as name.png under the directory
// WEIR_CONSOLE_SCREENSHOTS names (docs/console keeps them), if set.
func (br *browser) screenshot(name string) {
	br.t.Helper()
	dir := os.Getenv("WEIR_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(br.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		br.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		br.t.Fatal(err)
	}
}
