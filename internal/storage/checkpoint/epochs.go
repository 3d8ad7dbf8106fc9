package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// EpochEntry is one line of leader-epoch-checkpoint.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// WriteEpochs atomically writes a leader-epoch-checkpoint file, in the
// given order, and fsyncs it (file and directory).
func WriteEpochs(path string, entries []EpochEntry) error {
	return writeEpochs(path, entries, true)
}

// ReplaceEpochs writes the file like WriteEpochs without the fsyncs
// (ReplaceFile), for a caller that makes the whole filesystem durable
// afterwards.
func ReplaceEpochs(path string, entries []EpochEntry) error {
	return writeEpochs(path, entries, false)
}

func writeEpochs(path string, entries []EpochEntry, sync bool) error {
	var buf bytes.Buffer
	header(&buf, len(entries))
	for _, e := range entries {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return fmt.Errorf("checkpoint %s: negative epoch entry %d %d", path, e.Epoch, e.StartOffset)
		}
		fmt.Fprintf(&buf, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return writeFile(path, buf.Bytes(), sync)
}

// ReadEpochs reads a leader-epoch-checkpoint; a missing file is no entries.
func ReadEpochs(path string) ([]EpochEntry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	entries, err := ParseEpochs(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return entries, nil
}

// ParseEpochs parses the contents of a leader-epoch-checkpoint file. The
// order of entries is kept as written; the epoch cache decides what a
// non-monotonic history means.
func ParseEpochs(data []byte) ([]EpochEntry, error) {
	ls, err := lines(data)
	if err != nil {
		return nil, err
	}
	entries := make([]EpochEntry, 0, len(ls))
	for i, line := range ls {
		lineNo := i + 3
		f, err := fields(line, lineNo, 2)
		if err != nil {
			return nil, err
		}
		epoch, err := parseNonNegative(f[0], 32, lineNo, "epoch")
		if err != nil {
			return nil, err
		}
		start, err := parseNonNegative(f[1], 64, lineNo, "start offset")
		if err != nil {
			return nil, err
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return entries, nil
}
