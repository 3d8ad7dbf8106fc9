package metadata

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperDirEnv = "WEIR_METADATA_HELPER_DIR"

// TestHelperProcess is the child of TestKill9KeepsAppliedTopics: it creates
// topics forever, printing each name once its Apply has returned.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestKill9KeepsAppliedTopics")
	}
	c, err := Open(testConfig(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	if err := c.WaitLeader(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "wait leader:", err)
		os.Exit(2)
	}
	if err := c.RegisterBroker(ctx, Broker{ID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		fmt.Fprintln(os.Stderr, "register:", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("killed-%05d", i)
		if _, err := c.CreateTopic(ctx, CreateTopic{Name: name, NumPartitions: 1, ReplicationFactor: 1}); err != nil {
			fmt.Fprintln(os.Stderr, "create:", err)
			os.Exit(2)
		}
		fmt.Println(name)
	}
}

func TestKill9KeepsAppliedTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var printed []string
	deadline := time.After(testTimeout)
	for len(printed) < 25 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("child exited after printing %d names", len(printed))
			}
			if strings.HasPrefix(line, "killed-") {
				printed = append(printed, line)
			}
		case <-deadline:
			t.Fatalf("child printed only %d names", len(printed))
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill child %d: %v", pid, err)
	}
	killed = true
	// Names printed before the kill landed are applied too: collect them.
	for line := range lines {
		if strings.HasPrefix(line, "killed-") {
			printed = append(printed, line)
		}
	}
	_ = cmd.Wait()

	c := openLeader(t, testConfig(dir))
	im := c.Image()
	for _, name := range printed {
		if im.TopicByName(name) == nil {
			t.Fatalf("topic %s acknowledged before kill -9 is missing after restart (%d printed, %d topics)", name, len(printed), im.NumTopics())
		}
	}
	if im.ClusterID() == "" {
		t.Fatal("cluster id lost")
	}
	t.Logf("%d acknowledged topics survived kill -9 (%d present)", len(printed), im.NumTopics())
}
