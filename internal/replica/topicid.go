package replica

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// partition.metadata records which topic incarnation a partition directory
// belongs to, in Kafka's format:
//
//	version: 0
//	topic_id: <base64url topic id, no padding>
//
// A topic deleted and re-created under the same name gets a new id, so a
// directory left behind by a crash mid-delete is recognised as stale.
const partitionMetadataFile = "partition.metadata"

func writeTopicID(dir string, id [16]byte) error {
	body := "version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n"
	if err := checkpoint.WriteFileAtomic(filepath.Join(dir, partitionMetadataFile), []byte(body)); err != nil {
		return fmt.Errorf("write %s: %w", partitionMetadataFile, err)
	}
	return nil
}

// readTopicID returns the stored topic id; ok=false if there is none.
func readTopicID(dir string) (id [16]byte, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		v, found := strings.CutPrefix(line, "topic_id:")
		if !found {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(raw) != 16 {
			return id, false, fmt.Errorf("%s in %s: bad topic_id %q", partitionMetadataFile, dir, strings.TrimSpace(v))
		}
		copy(id[:], raw)
		return id, true, nil
	}
	return id, false, fmt.Errorf("%s in %s: no topic_id", partitionMetadataFile, dir)
}
