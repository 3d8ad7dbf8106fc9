package verify

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumFlags keep headless Chromium off the network and out of any
// profile but a fresh one.
var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"}

// chromium runs Chromium with args in its own process group, killed
// whole when it is done or after a minute.
func chromium(t *testing.T, bin string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := append(append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir()), args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers it left behind
	}
	if err != nil {
		t.Logf("chromium stderr:\n%s", stderr.String())
	}
	return stdout.Bytes(), err
}

// renderReport opens the report in headless Chromium: the DOM it parsed
// holds both plots, and its screenshot shows the throughput line and,
// if there were faults, their shaded windows. WEIR_VERIFY_SCREENSHOT
// names a file to copy the screenshot to (docs/ keeps one).
func renderReport(t *testing.T, report string, faults int) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no chromium to render the report in (scripts/install-test-deps.sh installs Debian's chromium)")
	}
	url := "file://" + report
	dom, err := chromium(t, bin, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if n := strings.Count(string(dom), `<svg `); n != 2 || !strings.Contains(string(dom), "<polyline") {
		t.Fatalf("the rendered page holds %d plots (want 2) or no lines", n)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	if _, err := chromium(t, bin, "--screenshot="+shot, "--window-size=1200,1500", url); err != nil {
		t.Fatalf("chromium --screenshot: %v", err)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// The throughput line (#1f77b4) and a fault window's shading (a
	// fault colour at 55% over white) must be on the picture.
	line := countNear(img, [3]int{0x1f, 0x77, 0xb4}, 30)
	if line < 100 {
		t.Fatalf("%d pixels of the throughput line on the screenshot", line)
	}
	if faults > 0 {
		shaded := 0
		for _, c := range [][3]int{{0xf4, 0xa6, 0xa6}, {0xa6, 0xc8, 0xf4}, {0xf4, 0xd9, 0xa6}, {0xd3, 0xa6, 0xf4}, {0xa6, 0xf4, 0xc1}, {0xf4, 0xa6, 0xe0}} {
			shaded += countNear(img, blend(c, 0.55), 6)
		}
		if shaded < 2000 {
			t.Fatalf("%d pixels of shaded fault windows on the screenshot", shaded)
		}
	}
	t.Logf("report rendered: %dx%d, %d pixels of the throughput line", img.Bounds().Dx(), img.Bounds().Dy(), line)
	if dst := os.Getenv("WEIR_VERIFY_SCREENSHOT"); dst != "" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func blend(c [3]int, alpha float64) [3]int {
	var out [3]int
	for i := range c {
		out[i] = int(float64(c[i])*alpha + 255*(1-alpha) + 0.5)
	}
	return out
}

func countNear(img image.Image, want [3]int, tol int) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			d := abs(int(r>>8)-want[0]) + abs(int(g>>8)-want[1]) + abs(int(bl>>8)-want[2])
			if d <= tol {
				n++
			}
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
