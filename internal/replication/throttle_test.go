package replication

import (
	"math"
	"testing"
	"time"
)

func TestThrottleBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	if b, _ := th.budget(); b != math.MaxInt64 {
		t.Fatalf("no limit: budget %d", b)
	}
	th.setRate(1000)
	if b, _ := th.budget(); b != 1000 {
		t.Fatalf("new limit starts with a second's budget, got %d", b)
	}
	// A batch larger than the budget leaves a debt to wait out.
	th.charge(2500)
	b, due := th.budget()
	if b != 0 || due.Sub(now) < 1500*time.Millisecond || due.Sub(now) > 1600*time.Millisecond {
		t.Fatalf("after a 1500-byte debt: budget %d due in %v", b, due.Sub(now))
	}
	now = now.Add(2 * time.Second)
	if b, _ := th.budget(); b != 500 {
		t.Fatalf("2s later: budget %d, want 500", b)
	}
	// Idle time accumulates at most one second's worth.
	now = now.Add(time.Hour)
	if b, _ := th.budget(); b != 1000 {
		t.Fatalf("after an hour idle: budget %d, want 1000", b)
	}
	// Over a long run the bytes granted follow the rate.
	granted := int64(0)
	start := now
	for range 10000 {
		now = now.Add(10 * time.Millisecond)
		if b, _ := th.budget(); b > 0 {
			n := min(b, 300)
			th.charge(int(n))
			granted += n
		}
	}
	secs := now.Sub(start).Seconds()
	if rate := float64(granted) / secs; rate > 1000*1.01+1000/secs || rate < 990 {
		t.Fatalf("granted %.0f bytes/s at a 1000 bytes/s limit", rate)
	}
	th.setRate(-1)
	if b, _ := th.budget(); b != math.MaxInt64 {
		t.Fatalf("limit removed: budget %d", b)
	}
}
