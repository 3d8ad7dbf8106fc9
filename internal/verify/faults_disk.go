package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// diskMiB is the size of the disk-full node's tmpfs: ten times what a
// ten-minute run writes to one node, small enough to fill in a moment.
const diskMiB = 128

// tmpfs is a small size-limited filesystem mounted for one node's log
// dir (root only).
type tmpfs struct{ dir string }

func mountTmpfs(dir string, sizeMiB int) (*tmpfs, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("mounting a small tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMiB), "tmpfs", dir).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("mount tmpfs on %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return &tmpfs{dir: dir}, nil
}

func (t *tmpfs) unmount() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "umount", t.dir).CombinedOutput(); err != nil {
		return fmt.Errorf("umount %s: %v: %s", t.dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (t *tmpfs) ballast() string { return filepath.Join(t.dir, "ballast") }

// fill writes a ballast file until the filesystem refuses another byte,
// and returns its size.
func (t *tmpfs) fill() (int64, error) {
	f, err := os.OpenFile(t.ballast(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
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

// free removes the ballast.
func (t *tmpfs) free() error {
	if err := os.Remove(t.ballast()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ballast: %w", err)
	}
	return nil
}

// tear appends garbage to the active (last) segment of every partition
// of the given topics in a stopped node's log dirs, as a crash in the
// middle of a write would leave it. It returns what it did.
func tear(logDirs []string, topics []string, rng *rand.Rand) (string, error) {
	var torn []string
	var total int
	for _, dir := range logDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return "", fmt.Errorf("torn write: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() || !ofTopics(e.Name(), topics) {
				continue
			}
			seg, err := lastSegment(filepath.Join(dir, e.Name()))
			if err != nil || seg == "" {
				continue
			}
			junk := garbage(rng)
			f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return "", fmt.Errorf("torn write: %w", err)
			}
			_, err = f.Write(junk)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", fmt.Errorf("torn write %s: %w", seg, err)
			}
			torn = append(torn, e.Name())
			total += len(junk)
		}
	}
	slices.Sort(torn)
	return fmt.Sprintf("%d bytes of garbage on %d segments (%s)", total, len(torn), strings.Join(torn, " ")), nil
}

// ofTopics reports whether a partition dir name (topic-N) is of topics.
func ofTopics(name string, topics []string) bool {
	i := strings.LastIndexByte(name, '-')
	return i > 0 && slices.Contains(topics, name[:i])
}

// lastSegment is the .log file with the highest base offset in dir.
func lastSegment(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	last := ""
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") && e.Name() > last {
			last = e.Name() // names are 20-digit base offsets: sorted as strings
		}
	}
	if last == "" {
		return "", nil
	}
	return filepath.Join(dir, last), nil
}

// garbage is what a torn write leaves: random bytes, zeros (space
// allocated, data never written), or the start of a batch whose header
// looks right and whose body is cut short or corrupt.
func garbage(rng *rand.Rand) []byte {
	n := 1 + rng.IntN(4096)
	b := make([]byte, n)
	switch rng.IntN(3) {
	case 0:
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	case 1: // zeros
	default:
		b = make([]byte, max(n, 61))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		binary.BigEndian.PutUint64(b[0:], uint64(rng.Int64N(1<<20)))      // base offset
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12+rng.IntN(64))) // batch length, maybe past the end
		b[16] = 2                                                         // magic
	}
	return b
}
