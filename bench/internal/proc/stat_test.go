package proc

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Field 14 (utime) = 250 ticks, field 15 (stime) = 50 ticks; the
	// command holds a space and a ')' to check fields are counted from the
	// last one.
	line := []byte("1234 (we ir) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 1000 10")
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3*time.Second {
		t.Errorf("cpu = %v, want 3s", got)
	}
	if _, err := parseStatCPU([]byte("1234 (x) S 1")); err == nil {
		t.Error("short line accepted")
	}
}

func TestOwnProcess(t *testing.T) {
	if _, err := CPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, err := RSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("rss %d, %v", rss, err)
	}
}
