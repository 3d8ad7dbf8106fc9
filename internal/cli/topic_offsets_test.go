package cli

import "testing"

func TestParseOffsetSpec(t *testing.T) {
	for in, want := range map[string]offsetSpec{
		"latest": {name: "latest"}, "-1": {name: "latest"}, "EARLIEST": {name: "earliest"}, "-2": {name: "earliest"},
		"max-timestamp": {name: "max-timestamp"}, "-3": {name: "max-timestamp"}, "0": {millis: 0}, "1700000000000": {millis: 1700000000000},
	} {
		if got, err := parseOffsetSpec(in); err != nil || got != want {
			t.Errorf("parseOffsetSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-4", "1.5", "2024-01-01"} {
		if _, err := parseOffsetSpec(in); err == nil {
			t.Errorf("parseOffsetSpec(%q) accepted", in)
		}
	}
}
