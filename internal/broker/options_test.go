package broker

import (
	"path/filepath"
	"testing"
)

// TestMetadataDir checks where the Raft store goes: under metadata.log.dir
// when set, else under the first log dir, as in Kafka.
func TestMetadataDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"default", Options{LogDirs: []string{"/a", "/b"}}, filepath.Join("/a", "__raft")},
		{"metadata.log.dir", Options{LogDirs: []string{"/a", "/b"}, MetadataLogDir: "/m"}, filepath.Join("/m", "__raft")},
	} {
		if got := tc.opts.metadataDir(); got != tc.want {
			t.Errorf("%s: metadata dir %q, want %q", tc.name, got, tc.want)
		}
	}
}
