package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path via path.tmp, fsync, rename, dir fsync.
func WriteFileAtomic(path string, data []byte) error {
	return writeFile(path, data, true)
}

// ReplaceFile writes data to path via path.tmp and rename, without an
// fsync: a reader sees the old file or the new one, whole, but after a
// power loss the file may be missing or damaged until the caller has
// fsynced it (SyncFile) and its directory. For files whose loss is
// detected and repaired (a producer snapshot carries a CRC).
func ReplaceFile(path string, data []byte) error {
	return writeFile(path, data, false)
}

// SyncFile fsyncs the file at path (not its directory: the caller fsyncs
// that once for all its files); a file that no longer exists has nothing
// to make durable.
func SyncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s to fsync it: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

func writeFile(path string, data []byte, sync bool) error {
	tmp := path + ".tmp"
	if err := writeTemp(tmp, data, sync); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if !sync {
		return nil
	}
	// The rename is durable only once the directory entry is on disk.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("sync dir of %s: %w", path, err)
	}
	return nil
}

func writeTemp(path string, data []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
