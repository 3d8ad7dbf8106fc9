package suite

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/weir-project/weir/bench/internal/hostmem"
	"github.com/weir-project/weir/bench/internal/report"
)

// Machine describes this machine and the versions under test; weirSrc is
// the checkout weir is built from, benchDir this module.
func Machine(weirSrc, benchDir, tmp string) report.Machine {
	m := report.Machine{
		CPU:               cpuModel(),
		Cores:             runtime.NumCPU(),
		Kernel:            strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		Go:                strings.TrimPrefix(strings.TrimSpace(output("go", "version")), "go version "),
		Date:              time.Now().UTC().Format("2006-01-02 15:04 MST"),
		LoadStart:         Load(),
		Disk:              diskOf(tmp),
		FreePageReporting: hostmem.Reporting(),
		Versions:          map[string]string{},
	}
	if mem, err := meminfo("MemTotal"); err == nil {
		m.MemGiB = float64(mem) / (1 << 30)
	}
	commit := strings.TrimSpace(output("git", "-C", weirSrc, "rev-parse", "--short", "HEAD"))
	if commit != "" {
		if strings.TrimSpace(output("git", "-C", weirSrc, "status", "--porcelain", "--untracked-files=no")) != "" {
			commit += " (with uncommitted changes)"
		}
		m.Versions["weir"] = "commit " + commit
	}
	for path, v := range peerVersions(benchDir) {
		m.Versions[path] = v
	}
	return m
}

// peerVersions are the versions of the peers' and client modules this
// module's go.mod requires (nats-server is a tool of the module, not
// linked into the suite, so build info does not have it).
func peerVersions(benchDir string) map[string]string {
	want := map[string]bool{"github.com/twmb/franz-go": true, "github.com/twmb/franz-go/pkg/kfake": true,
		"github.com/nats-io/nats-server/v2": true, "github.com/nats-io/nats.go": true}
	out := map[string]string{}
	for _, line := range strings.Split(readFile(filepath.Join(benchDir, "go.mod")), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && want[f[0]] {
			out[f[0]] = f[1]
		}
	}
	return out
}

// Load is the load-average part of `uptime`.
func Load() string {
	out := strings.TrimSpace(output("uptime"))
	if i := strings.Index(out, "load average:"); i >= 0 {
		return strings.TrimSpace(out[i+len("load average:"):])
	}
	return strings.TrimSpace(readFile("/proc/loadavg"))
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// diskOf is the `df -hT` line of the filesystem holding dir.
func diskOf(dir string) string {
	lines := strings.Split(strings.TrimSpace(output("df", "-hT", dir)), "\n")
	if len(lines) < 2 {
		return "unknown"
	}
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 7 {
		return lines[len(lines)-1]
	}
	return f[1] + " on " + f[0] + ", " + f[2] + " (" + f[4] + " free)"
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// output is a command's stdout, "" if it fails (machine details are
// best-effort).
func output(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}
