package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// RSS is a process's resident set size in bytes (VmRSS in
// /proc/<pid>/status). Tests that attack the broker watch it to stop
// before they hurt the machine.
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("pid %d: unexpected VmRSS line %q", pid, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("pid %d: VmRSS %q: %w", pid, fields[0], err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("pid %d: no VmRSS in status (process gone?)", pid)
}

// FDCount is the number of file descriptors a process has open.
func FDCount(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("list fds of pid %d: %w", pid, err)
	}
	return len(entries), nil
}

// MainWithoutRace is Main with the binary built without the race
// detector, for tests that measure the broker's memory: the race runtime
// changes how memory is paged in (a hostile 100 MiB claim that grows a
// plain build by 100 MiB of RSS leaves a -race build unchanged), so RSS
// limits are only meaningful on the binary as shipped.
func MainWithoutRace(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weirBin = filepath.Join(dir, "weir")
	build := exec.Command("go", "build", "-o", weirBin, "github.com/weir-project/weir/cmd/weir")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build weir:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
