package cli

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// parseAddConfig reads --add-config values the way kafka-configs does:
// each is a comma-separated list of key=value, and a value that itself
// holds commas (a list config) goes in square brackets, k=[a,b]. Spaces
// around keys and values are dropped.
func parseAddConfig(args []string) ([][2]string, error) {
	var out [][2]string
	for _, arg := range args {
		for _, item := range splitOutsideBrackets(arg) {
			if strings.TrimSpace(item) == "" {
				continue
			}
			k, v, ok := strings.Cut(item, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("--add-config %q: %q is not key=value (a value holding commas goes in brackets: key=[a,b])", arg, item)
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && v[0] == '[' && v[len(v)-1] == ']' {
				v = v[1 : len(v)-1]
			}
			out = append(out, [2]string{k, v})
		}
	}
	return out, nil
}

// splitOutsideBrackets splits s at the commas not inside [...].
func splitOutsideBrackets(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// parseDeleteConfig reads --delete-config values: comma-separated keys.
func parseDeleteConfig(args []string) []string {
	var out []string
	for _, arg := range args {
		for _, k := range strings.Split(arg, ",") {
			if k = strings.TrimSpace(k); k != "" {
				out = append(out, k)
			}
		}
	}
	return out
}

// configAlters turns the parsed flags into incremental operations. A key
// named twice is refused here: the broker would answer INVALID_REQUEST for
// the whole resource, and the user surely meant one of them.
func configAlters(adds [][2]string, deletes []string) ([]kadm.AlterConfig, error) {
	if len(adds) == 0 && len(deletes) == 0 {
		return nil, fmt.Errorf("nothing to alter: give --add-config key=value and/or --delete-config key")
	}
	seen := map[string]bool{}
	var alters []kadm.AlterConfig
	for _, kv := range adds {
		if seen[kv[0]] {
			return nil, fmt.Errorf("config %q given twice", kv[0])
		}
		seen[kv[0]] = true
		v := kv[1]
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: &v})
	}
	for _, k := range deletes {
		if seen[k] {
			return nil, fmt.Errorf("config %q given twice", k)
		}
		seen[k] = true
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return alters, nil
}
