//go:build unix

package storage

import (
	"fmt"
	"syscall"
)

// fileLimit is the process's soft RLIMIT_NOFILE (Go raises it to the hard
// limit at start).
func fileLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("getrlimit NOFILE: %w", err)
	}
	return uint64(r.Cur), nil
}
