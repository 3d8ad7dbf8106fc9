// Package tmpfs mounts small size-limited file systems to fill up: the
// full disk of weir verify's disk-full fault and of the tests. Linux and
// root only (mount(8) and umount(8)).
package tmpfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Disk is a mounted tmpfs.
type Disk struct {
	Dir string // the mount point
}

// ErrNotRoot: only root may mount.
var ErrNotRoot = errors.New("mounting a small tmpfs needs root")

// Mount mounts a tmpfs of sizeMiB on dir (created if missing).
func Mount(dir string, sizeMiB int) (*Disk, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := run("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", dir); err != nil {
		return nil, fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return &Disk{Dir: dir}, nil
}

// Unmount unmounts the disk; what it held is gone.
func (d *Disk) Unmount() error {
	if err := run("umount", d.Dir); err != nil {
		return fmt.Errorf("umount %s: %w", d.Dir, err)
	}
	return nil
}

func run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Ballast is the file Fill writes.
func (d *Disk) Ballast() string { return filepath.Join(d.Dir, "ballast") }

// Fill writes the ballast file until the file system refuses another
// byte, and returns how many bytes it added.
func (d *Disk) Fill() (int64, error) {
	f, err := os.OpenFile(d.Ballast(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("ballast: %w", err)
	}
	defer f.Close()
	var n int64
	// Big writes first, then ever smaller ones, down to one byte: tmpfs
	// gives space by pages, and a half-used page still takes bytes.
	for _, size := range []int{1 << 20, 64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, size)
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("ballast: %w", err)
			}
		}
	}
	return n, nil
}

// Free removes the ballast.
func (d *Disk) Free() error {
	if err := os.Remove(d.Ballast()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ballast: %w", err)
	}
	return nil
}
