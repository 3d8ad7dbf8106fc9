package limits

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// FileAppend appends total bytes to a new file in dir in writes of batch
// bytes, with an fsync each time fsyncEvery bytes were written since the
// last (0: never, the page cache only). The file is removed afterwards.
func FileAppend(dir string, total int64, batch int, fsyncEvery int64) (Result, error) {
	f, err := os.CreateTemp(dir, "append-limit-")
	if err != nil {
		return Result{}, fmt.Errorf("file append limit: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	start := time.Now()
	var unsynced int64
	err = writeChunks(total, batch, pattern(4<<20), func(b []byte) (int, error) {
		k, err := f.Write(b)
		if err != nil {
			return k, fmt.Errorf("append to %s: %w", f.Name(), err)
		}
		unsynced += int64(k)
		if fsyncEvery > 0 && unsynced >= fsyncEvery {
			if err := f.Sync(); err != nil {
				return k, fmt.Errorf("fsync %s: %w", f.Name(), err)
			}
			unsynced = 0
		}
		return k, nil
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Bytes: total, Elapsed: time.Since(start)}, nil
}

// DiskWrite writes total bytes to a new file in dir and fsyncs it; the
// time includes the fsync, so for a total well past what the kernel
// writes back in the background it is the disk's sustained write
// bandwidth: where a broker producing faster than that ends up once the
// page cache's dirty limit is reached.
func DiskWrite(dir string, total int64) (Result, error) {
	f, err := os.CreateTemp(dir, "disk-limit-")
	if err != nil {
		return Result{}, fmt.Errorf("disk write limit: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	src := pattern(1 << 20)
	start := time.Now()
	for sent := int64(0); sent < total; sent += int64(len(src)) {
		if _, err := f.Write(src); err != nil {
			return Result{}, fmt.Errorf("write %s: %w", f.Name(), err)
		}
	}
	if err := f.Sync(); err != nil {
		return Result{}, fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	el := time.Since(start)
	// Leave no dirty or cached pages of ours behind for the next case.
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return Result{Bytes: total, Elapsed: el}, nil
}

// Evict writes back and drops from the page cache every file under dir
// (posix_fadvise DONTNEED, file by file: unlike drop_caches it touches
// only these files, so other users of the machine keep their cache), so
// the next read of them comes from the disk.
func Evict(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("evict %s: %w", path, err)
		}
		defer f.Close()
		// DONTNEED skips dirty pages: write them back first.
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return fmt.Errorf("fdatasync %s: %w", path, err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return fmt.Errorf("fadvise %s: %w", path, err)
		}
		return nil
	})
}

// PacedAppend appends to a new file in dir at bytesPerSec, in writes of
// chunk bytes, for d, and returns how long each write took: the page
// cache's own latency at a broker's rate, with no network and no protocol.
// A produce round trip includes one such write, so its tail bounds what
// any broker that writes to the page cache can promise here.
func PacedAppend(dir string, bytesPerSec float64, chunk int, d time.Duration) ([]time.Duration, error) {
	if bytesPerSec <= 0 || chunk <= 0 {
		return nil, fmt.Errorf("paced append: rate %v and chunk %d must be positive", bytesPerSec, chunk)
	}
	f, err := os.CreateTemp(dir, "paced-append-")
	if err != nil {
		return nil, fmt.Errorf("paced append limit: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	src := pattern(chunk)
	every := time.Duration(float64(chunk) / bytesPerSec * float64(time.Second))
	var out []time.Duration
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * every)
		if due.Sub(start) >= d {
			return out, nil
		}
		time.Sleep(time.Until(due))
		t := time.Now()
		if _, err := f.Write(src); err != nil {
			return nil, fmt.Errorf("append to %s: %w", f.Name(), err)
		}
		out = append(out, time.Since(t))
	}
}
