package cli

import "testing"

func TestIdempotenceDefaultsLikeJava(t *testing.T) {
	for _, c := range []struct {
		want, explicit bool
		acks           string
		on, fails      bool
	}{
		{true, false, "all", true, false},
		{true, false, "-1", true, false},
		{true, false, "1", false, false}, // default: quietly off
		{true, false, "0", false, false},
		{true, true, "1", false, true}, // asked for with acks=1: refuse
		{false, true, "all", false, false},
		{false, false, "1", false, false},
	} {
		on, err := idempotence(c.want, c.explicit, c.acks)
		if on != c.on || (err != nil) != c.fails {
			t.Errorf("idempotence(%v, explicit %v, acks %s) = %v, %v; want %v, fails %v", c.want, c.explicit, c.acks, on, err, c.on, c.fails)
		}
	}
}
