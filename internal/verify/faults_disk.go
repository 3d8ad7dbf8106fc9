package verify

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// diskMiB is the size of the disk-full node's tmpfs: ten times what a
// ten-minute run writes to one node, small enough to fill in a moment.
const diskMiB = 128

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
