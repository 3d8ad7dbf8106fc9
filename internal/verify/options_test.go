package verify

import (
	"strings"
	"testing"
)

// Faults that cannot run as asked are refused before anything starts,
// with a line that says why.
func TestValidateFaults(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string // "" = accepted
	}{
		{Options{Faults: []string{FaultKill}}, ""},
		{Options{Faults: []string{"boom"}}, `unknown fault "boom"`},
		{Options{Faults: []string{FaultLose}}, "needs --unsafe"},
		{Options{Faults: []string{FaultCascade}}, "needs --nodes 5 or more"},
		{Options{Faults: []string{FaultCascade}, Nodes: 5}, ""},
		{Options{Faults: []string{FaultKill}, GroupProtocol: GroupConsumer}, ""},
		{Options{Faults: []string{FaultKill}, GroupProtocol: "eager"}, `--group-protocol: "eager"`},
		{Options{Faults: []string{FaultKill}, MinInsync: 3}, ""},
		{Options{Faults: []string{FaultKill}, MinInsync: 4}, "--min-insync 4: between 1 and the replication factor, 3"},
		{Options{Faults: []string{FaultKill}, MinInsync: -1}, "--min-insync -1"},
		{Options{Unsafe: true, MinInsync: 2}, "--min-insync 2: --unsafe runs with 1"},
		{Options{Unsafe: true, MinInsync: 1}, ""},
	} {
		err := c.o.withDefaults().validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.o.Faults, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: err %v, want %q", c.o.Faults, err, c.want)
		}
	}
}
