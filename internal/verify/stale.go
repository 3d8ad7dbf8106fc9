package verify

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/weir-project/weir/internal/tmpfs"
)

// A run that dies without its cleanup (kill -9 of verify itself) leaves
// its temp data dir and, with the disk-full fault, a mounted tmpfs. Each
// temp data dir therefore names its owner in a file, and every run first
// removes what dead owners left: unmounting what is mounted inside, then
// the dir.

const ownerFile = "verify.pid"

// claim records this process as the owner of dir.
func claim(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// cleanStale removes the temp data dirs of runs whose process is gone,
// returning what it removed.
func cleanStale() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "weir-verify-data*"))
	var removed []string
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours to judge (being created, or no owner)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		clean := true
		for _, m := range mountsUnder(dir) {
			if err := (&tmpfs.Disk{Dir: m}).Unmount(); err != nil {
				clean = false
			}
		}
		if clean && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// mountsUnder lists the mount points inside dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && strings.HasPrefix(fields[1], dir+string(filepath.Separator)) {
			out = append([]string{fields[1]}, out...)
		}
	}
	return out
}
