package suite

import (
	"slices"
	"testing"
	"time"
)

func TestRotateAlternatesOrder(t *testing.T) {
	xs := []string{"weir", "kfake", "JetStream"}
	want := [][]string{{"weir", "kfake", "JetStream"}, {"kfake", "JetStream", "weir"}, {"JetStream", "weir", "kfake"}, {"weir", "kfake", "JetStream"}}
	for r, w := range want {
		if got := rotate(xs, r); !slices.Equal(got, w) {
			t.Errorf("round %d: %v, want %v", r, got, w)
		}
	}
}

func TestLogTime(t *testing.T) {
	out := "time=2026-12-01T16:20:44.121Z level=INFO msg=\"recovering\"\n" +
		"time=2026-12-01T16:20:44.124Z level=INFO msg=\"log manager loaded\" component=storage\n"
	at, ok := logTime(out, "log manager loaded")
	if !ok || !at.Equal(time.Date(2026, 12, 1, 16, 20, 44, 124e6, time.UTC)) {
		t.Errorf("logTime = %v %v", at, ok)
	}
	if _, ok := logTime(out, "weir started"); ok {
		t.Error("found a line that is not there")
	}
}

func TestDirtyLimit(t *testing.T) {
	n, err := dirtyLimit()
	if err != nil || n <= 0 {
		t.Errorf("dirty limit %d, %v", n, err)
	}
}
