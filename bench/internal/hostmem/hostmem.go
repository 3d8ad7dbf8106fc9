// Package hostmem deals with a virtual machine whose host takes free
// memory back: with virtio-balloon free page reporting, pages the guest
// has freed are handed to the host, which drops them, so the next write
// into such a page faults on the host. On the suite's machine that made
// the copy into fresh page-cache pages 4–6x slower in some rounds and
// not in others, by the memory history of the round, not by the broker.
//
// Warm gives the next run memory the host backs: it touches and frees a
// region, and the freed pages go back on the guest's free lists before
// the reporting catches up with them.
package hostmem

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// reportingBit is VIRTIO_BALLOON_F_REPORTING, the free page reporting
// feature of a virtio-balloon device.
const reportingBit = 5

// Reporting reports whether a virtio-balloon device with free page
// reporting is bound on this machine.
func Reporting() bool {
	paths, _ := filepath.Glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*/features")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && hasFeature(strings.TrimSpace(string(b)), reportingBit) {
			return true
		}
	}
	return false
}

// hasFeature reads a virtio features file: one '0' or '1' per bit, bit 0
// first.
func hasFeature(bits string, bit int) bool {
	return len(bits) > bit && bits[bit] == '1'
}

// Warm touches n bytes of fresh anonymous memory, a byte per page, and
// frees them.
func Warm(n int) error {
	if n <= 0 {
		return nil
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("warm %d bytes: %w", n, err)
	}
	page := os.Getpagesize()
	for i := 0; i < n; i += page {
		b[i] = 1
	}
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("warm: munmap: %w", err)
	}
	return nil
}
