package hostmem

import "testing"

func TestHasFeature(t *testing.T) {
	for _, tc := range []struct {
		bits string
		bit  int
		want bool
	}{
		{"0000010000000000", 5, true},
		{"1111101111", 5, false},
		{"00001", 5, false}, // too short to hold the bit
		{"", 0, false},
	} {
		if got := hasFeature(tc.bits, tc.bit); got != tc.want {
			t.Errorf("hasFeature(%q, %d) = %v, want %v", tc.bits, tc.bit, got, tc.want)
		}
	}
}

func TestWarm(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 3<<20 + 17} {
		if err := Warm(n); err != nil {
			t.Fatalf("Warm(%d): %v", n, err)
		}
	}
	t.Logf("free page reporting here: %v", Reporting())
}
