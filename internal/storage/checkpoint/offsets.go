package checkpoint

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// WriteOffsets atomically writes an offset checkpoint file, entries sorted
// by topic and partition so equal maps give equal files.
func WriteOffsets(path string, offsets map[TopicPartition]int64) error {
	data, err := formatOffsets(offsets)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return WriteFileAtomic(path, data)
}

func formatOffsets(offsets map[TopicPartition]int64) ([]byte, error) {
	keys := make([]TopicPartition, 0, len(offsets))
	for tp, off := range offsets {
		if !validTopic(tp.Topic) {
			return nil, fmt.Errorf("invalid topic name %q", tp.Topic)
		}
		if tp.Partition < 0 || off < 0 {
			return nil, fmt.Errorf("negative partition or offset: %s %d %d", tp.Topic, tp.Partition, off)
		}
		keys = append(keys, tp)
	}
	slices.SortFunc(keys, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var buf bytes.Buffer
	header(&buf, len(keys))
	for _, tp := range keys {
		fmt.Fprintf(&buf, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return buf.Bytes(), nil
}

// ReadOffsets reads an offset checkpoint file; a missing file is an empty map.
func ReadOffsets(path string) (map[TopicPartition]int64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	m, err := ParseOffsets(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return m, nil
}

// ParseOffsets parses the contents of an offset checkpoint file.
func ParseOffsets(data []byte) (map[TopicPartition]int64, error) {
	ls, err := lines(data)
	if err != nil {
		return nil, err
	}
	m := make(map[TopicPartition]int64, len(ls))
	for i, line := range ls {
		lineNo := i + 3
		f, err := fields(line, lineNo, 3)
		if err != nil {
			return nil, err
		}
		if !validTopic(f[0]) {
			return nil, fmt.Errorf("%w: line %d: invalid topic name %q", ErrMalformed, lineNo, f[0])
		}
		part, err := parseNonNegative(f[1], 32, lineNo, "partition")
		if err != nil {
			return nil, err
		}
		off, err := parseNonNegative(f[2], 64, lineNo, "offset")
		if err != nil {
			return nil, err
		}
		tp := TopicPartition{Topic: f[0], Partition: int32(part)}
		if _, dup := m[tp]; dup {
			return nil, fmt.Errorf("%w: line %d: duplicate entry for %s-%d", ErrMalformed, lineNo, tp.Topic, tp.Partition)
		}
		m[tp] = off
	}
	return m, nil
}
