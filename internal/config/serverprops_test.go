package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The example config/server.properties must document every broker key with
// its default, and nothing else, so it never drifts from this package.
func TestExampleServerProperties(t *testing.T) {
	path := filepath.Join("..", "..", "config", "server.properties")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	documented := make(map[string]string)
	line := regexp.MustCompile(`^#([a-z][a-z0-9.]*)=(.*)$`)
	for _, l := range strings.Split(string(data), "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			if _, dup := documented[m[1]]; dup {
				t.Errorf("%s documented twice", m[1])
			}
			documented[m[1]] = m[2]
		}
	}
	for _, k := range brokerKeys {
		v, ok := documented[k.name]
		switch {
		case !ok:
			t.Errorf("%s is not documented in %s", k.name, path)
		case k.null && v != "":
			t.Errorf("%s has no default but is documented as %q", k.name, v)
		case !k.null && v != k.def:
			t.Errorf("%s is documented with default %q, want %q", k.name, v, k.def)
		}
		delete(documented, k.name)
	}
	for k := range documented {
		t.Errorf("%s is documented but not a known key", k)
	}

	// The file as shipped loads cleanly, and so does every documented
	// default uncommented.
	b, warnings, err := Load(path, nil)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("Load(%s): %v, warnings %v", path, err, warnings)
	}
	uncommented := regexp.MustCompile(`(?m)^#([a-z][a-z0-9.]*=.+)$`).ReplaceAllString(string(data), "$1")
	again, warnings, err := Load(writeFile(t, uncommented), nil)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("uncommented defaults: %v, warnings %v", err, warnings)
	}
	if !again.IsSet("node.id") || !again.IsSet("log.segment.bytes") || again.IsSet("broker.rack") {
		t.Fatal("uncommenting the documented defaults did not set them")
	}
	got, want := again.Entries(), b.Entries()
	for i, e := range got {
		if w := want[i]; e.Name != w.Name || e.Value != w.Value || e.Null != w.Null {
			t.Errorf("%s: uncommented default gives %q, built-in default %q", e.Name, e.Value, w.Value)
		}
	}
}
