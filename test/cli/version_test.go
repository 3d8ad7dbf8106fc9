package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/weir-project/weir/test/harness"
)

var commitRE = regexp.MustCompile(`^commit: (unknown|[0-9a-f]{40}(\+modified)?)$`)

// checkVersion checks the three lines of weir version against the
// version it should report; --version prints the same.
func checkVersion(t *testing.T, bin, want string) {
	t.Helper()
	r := run(t, "", bin, "version")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%s version: exit %d, stderr %q", bin, r.code, r.stderr)
	}
	ls := lines(r.stdout)
	if len(ls) != 3 || ls[0] != "weir "+want || !commitRE.MatchString(ls[1]) ||
		ls[2] != "go: "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("%s version printed:\n%s", bin, r.stdout)
	}
	if flag := run(t, "", bin, "--version"); flag.code != 0 || flag.stdout != r.stdout {
		t.Errorf("%s --version: exit %d, printed %q, want %q", bin, flag.code, flag.stdout, r.stdout)
	}
}

// TestVersion: weir version and weir --version print the version ("dev"
// unless set with -ldflags), the commit and the Go version.
func TestVersion(t *testing.T) {
	checkVersion(t, harness.Bin(), "dev")

	bin := filepath.Join(t.TempDir(), "weir")
	build := exec.Command("go", "build", "-ldflags=-X main.version=9.8.7-test", "-o", bin, "github.com/weir-project/weir/cmd/weir")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build with -ldflags: %v\n%s", err, out)
	}
	checkVersion(t, bin, "9.8.7-test")
	if err := os.Remove(bin); err != nil {
		t.Error(err)
	}
}
