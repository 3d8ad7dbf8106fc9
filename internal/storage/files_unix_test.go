//go:build unix

package storage

import (
	"os"
	"syscall"
	"testing"
)

// TestFileCacheOpensAtTheDescriptorLimit: when the process has no
// descriptor left (sockets took them), reopening a segment closes an idle
// cached one to make room instead of failing the read.
func TestFileCacheOpensAtTheDescriptorLimit(t *testing.T) {
	_, hs := cachedFiles(t, 6, 5)
	for i := range 5 {
		if err := readVia(hs[i], i); err != nil {
			t.Fatal(err)
		}
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// The soft limit only: it can be raised back afterwards. No test in
	// this package runs in parallel, so nothing else needs a descriptor.
	// The limit bounds descriptor numbers, and a new descriptor takes the
	// lowest free one: a limit at that number leaves no room.
	probe, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	lowest := probe.Fd()
	probe.Close()
	lim := old
	lim.Cur = uint64(lowest)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	err = readVia(hs[5], 5)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("read at the descriptor limit: %v", err)
	}
}
