package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weir-project/weir/internal/storage/checkpoint"
)

// meta.properties ties a log dir to one node of one cluster, as in Kafka:
//
//	version=1
//	node.id=1
//	cluster.id=<22-char base64url uuid>
//
// A dir written by another node or cluster is refused at start rather than
// mixed into this one.
const metaPropertiesFile = "meta.properties"

type metaProperties struct {
	nodeID    int32
	clusterID string
}

// readMetaProperties checks every log dir's meta.properties against
// nodeID and each other and returns the cluster id they record ("" when
// no dir has one yet).
func readMetaProperties(dirs []string, nodeID int32) (string, error) {
	clusterID := ""
	for _, dir := range dirs {
		path := filepath.Join(dir, metaPropertiesFile)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		mp, err := parseMetaProperties(data)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if mp.nodeID != nodeID {
			return "", fmt.Errorf("%s belongs to node.id=%d, but this broker is node.id=%d", path, mp.nodeID, nodeID)
		}
		if clusterID != "" && mp.clusterID != clusterID {
			return "", fmt.Errorf("%s belongs to cluster %s, another log dir to cluster %s", path, mp.clusterID, clusterID)
		}
		clusterID = mp.clusterID
	}
	return clusterID, nil
}

func parseMetaProperties(data []byte) (metaProperties, error) {
	mp := metaProperties{nodeID: -1}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return mp, fmt.Errorf("malformed line %q", line)
		}
		switch strings.TrimSpace(k) {
		case "node.id":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return mp, fmt.Errorf("bad node.id %q", v)
			}
			mp.nodeID = int32(n)
		case "cluster.id":
			mp.clusterID = strings.TrimSpace(v)
		}
	}
	if mp.nodeID < 0 || mp.clusterID == "" {
		return mp, errors.New("node.id or cluster.id missing")
	}
	return mp, nil
}

// writeMetaProperties records node and cluster id in each log dir.
func writeMetaProperties(dirs []string, nodeID int32, clusterID string) error {
	body := "# written by weir\nversion=1\nnode.id=" + strconv.Itoa(int(nodeID)) + "\ncluster.id=" + clusterID + "\n"
	for _, dir := range dirs {
		path := filepath.Join(dir, metaPropertiesFile)
		if old, err := os.ReadFile(path); err == nil && string(old) == body {
			continue
		}
		if err := checkpoint.WriteFileAtomic(path, []byte(body)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
