package load

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestValuesAreSlicesOfThePool(t *testing.T) {
	pool := randomPool(1)
	v := newValues(pool, 1024, 5)
	a, b := v.next(), v.next()
	if len(a) != 1024 || len(b) != 1024 || bytes.Equal(a, b) {
		t.Fatal("values not distinct 1 KiB slices")
	}
	for range 10000 {
		if len(v.next()) != 1024 {
			t.Fatal("short value")
		}
	}
}

func TestStamp(t *testing.T) {
	v := make([]byte, 16)
	t0 := time.Now()
	stamp(v, t0)
	if d := sinceStamp(v, t0.Add(3*time.Millisecond)); d != 3*time.Millisecond {
		t.Errorf("since stamp %v", d)
	}
	if sinceStamp(v[:4], t0) >= 0 {
		t.Error("short value has a latency")
	}
}

func TestPaceSendsAtTheRate(t *testing.T) {
	start := time.Now()
	var ahead int
	var i int64
	n := pace(context.Background(), 2000, 250*time.Millisecond, func(now time.Time) {
		// Record i is due at start + i/2000 s: never sent before that.
		if now.Before(start.Add(time.Duration(i) * time.Second / 2000).Add(-time.Millisecond)) {
			ahead++
		}
		i++
	})
	// At most the 501 due in the window, plus the two due in the
	// millisecond after it that pace sends early rather than sleep (fewer
	// if this goroutine is starved at the end: a loaded machine must not
	// fail the test).
	if n <= 0 || n > 503 || ahead > 0 {
		t.Errorf("sent %d at 2000/s in 250ms, %d ahead of schedule", n, ahead)
	}
}
