package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMetaPropertiesRoundTripAndMismatch(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if id, err := readMetaProperties([]string{a, b}, 1); err != nil || id != "" {
		t.Fatalf("fresh dirs: id %q err %v", id, err)
	}
	if err := writeMetaProperties([]string{a, b}, 1, "abc"); err != nil {
		t.Fatal(err)
	}
	if id, err := readMetaProperties([]string{a, b}, 1); err != nil || id != "abc" {
		t.Fatalf("after write: id %q err %v", id, err)
	}
	if _, err := readMetaProperties([]string{a}, 2); err == nil || !strings.Contains(err.Error(), "node.id=1") {
		t.Fatalf("other node id: %v", err)
	}
	if err := writeMetaProperties([]string{b}, 1, "xyz"); err != nil {
		t.Fatal(err)
	}
	if _, err := readMetaProperties([]string{a, b}, 1); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("dirs of two clusters: %v", err)
	}
	if err := os.WriteFile(filepath.Join(a, metaPropertiesFile), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readMetaProperties([]string{a}, 1); err == nil {
		t.Fatal("malformed meta.properties accepted")
	}
}
