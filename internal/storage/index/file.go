package index

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// entries is the in-memory image of an index file, kept in the file's own
// byte format so writing it out is a copy. It is not locked: the index
// types that embed it hold the lock.
type entries struct {
	path       string
	entrySize  int
	maxEntries int
	buf        []byte
	// flushed is how many leading bytes of buf are known to match the file,
	// so a flush writes only what was appended since.
	flushed int
	// fileSize is the file's size as last read or written: when it and
	// flushed both equal len(buf), the file holds the entries exactly and
	// a close has nothing to write (a partition idle since the start
	// opens no index file at shutdown).
	fileSize int
}

// load reads an existing file (or creates an empty one) and checks its size;
// the caller checks the entries' order.
func load(path string, entrySize, maxBytes int) (entries, error) {
	e := entries{path: path, entrySize: entrySize, maxEntries: max(maxBytes, 0) / entrySize}
	buf, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return e, fmt.Errorf("create index %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return e, fmt.Errorf("create index %s: %w", path, err)
		}
		return e, nil // fileSize 0
	case err != nil:
		return e, fmt.Errorf("read index %s: %w", path, err)
	}
	if len(buf)%entrySize != 0 {
		return e, fmt.Errorf("index %s: %w: size %d is not a multiple of %d", path, ErrCorrupt, len(buf), entrySize)
	}
	if n := len(buf) / entrySize; n > e.maxEntries {
		return e, fmt.Errorf("index %s: %w: %d entries, at most %d allowed", path, ErrCorrupt, n, e.maxEntries)
	}
	e.buf = buf
	e.flushed = len(buf)
	e.fileSize = len(buf)
	return e, nil
}

func (e *entries) len() int   { return len(e.buf) / e.entrySize }
func (e *entries) full() bool { return e.len() >= e.maxEntries }

// entry returns the bytes of entry i.
func (e *entries) entry(i int) []byte { return e.buf[i*e.entrySize : (i+1)*e.entrySize] }

// truncate keeps the first n entries.
func (e *entries) truncate(n int) {
	e.buf = e.buf[:n*e.entrySize]
	e.flushed = min(e.flushed, len(e.buf))
}

// write brings the file in line with the entries: the unwritten tail is
// written, the file cut to exactly the entries' size, and fsynced if sync.
// The file is never recreated: if it has been deleted (segment deletion
// removes files before or after closing), a close has nothing to keep and
// succeeds, while a flush reports the loss.
func (e *entries) write(sync, closing bool) error {
	if !sync && e.inFile() {
		return nil
	}
	f, err := os.OpenFile(e.path, os.O_WRONLY, 0)
	if closing && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write index %s: %w", e.path, err)
	}
	err = e.writeTo(f, sync)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write index %s: %w", e.path, err)
	}
	return nil
}

// inFile reports whether the file holds exactly the entries.
func (e *entries) inFile() bool {
	return e.flushed == len(e.buf) && e.fileSize == len(e.buf)
}

// flush writes the entries like write without the fsync, under mu, and
// then fsyncs the file with mu released, so that lookups (which take mu)
// do not wait for the disk. A flush racing a rename fsyncs the file
// under either name: the descriptor follows it.
func (e *entries) flush(mu sync.Locker) error {
	mu.Lock()
	path := e.path
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		err = e.writeTo(f, false)
	}
	mu.Unlock()
	if f == nil {
		return fmt.Errorf("write index %s: %w", path, err)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write index %s: %w", path, err)
	}
	return nil
}

func (e *entries) writeTo(f *os.File, sync bool) error {
	if _, err := f.WriteAt(e.buf[e.flushed:], int64(e.flushed)); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(e.buf))); err != nil {
		return err
	}
	e.flushed, e.fileSize = len(e.buf), len(e.buf)
	if sync {
		return f.Sync()
	}
	return nil
}

// rename moves the file; the entries follow it.
func (e *entries) rename(newPath string) error {
	if err := os.Rename(e.path, newPath); err != nil {
		return fmt.Errorf("rename index %s: %w", e.path, err)
	}
	e.path = newPath
	return nil
}

// relative converts an absolute offset to the int32 stored in the file.
func relative(base, offset int64) (int32, error) {
	rel := offset - base
	if rel < 0 || rel > 1<<31-1 {
		return 0, fmt.Errorf("offset %d out of range for segment base %d", offset, base)
	}
	return int32(rel), nil
}
