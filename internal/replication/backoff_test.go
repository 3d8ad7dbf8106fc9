package replication

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// An answer that says the leader's metadata and the follower's disagree
// backs off 20 ms, then twice as long with each such answer in a row, up
// to the configured backoff; a fetch that succeeds starts the count again.
// Any other error waits the whole backoff.
//
// Such a streak is logged once at DEBUG, since every new topic goes
// through one, and once more at WARN if it lasts into the whole backoff.
func TestDisagreementBackoffGrows(t *testing.T) {
	logs := newLogRecorder()
	p := &partition{log: slog.New(logs), state: Fetching}
	const full = time.Second
	check := func(code int16, want time.Duration) {
		t.Helper()
		before := time.Now()
		p.delayAfter(full, code, errors.New("x"), false)
		after := time.Now()
		p.mu.Lock()
		to := p.delayTo
		p.mu.Unlock()
		if to.Before(before.Add(want)) || to.After(after.Add(want)) {
			t.Fatalf("code %d: backed off %v, want %v", code, to.Sub(before), want)
		}
	}
	for _, want := range []time.Duration{20, 40, 80, 160, 320, 640, 1000, 1000} {
		check(kerr.UnknownTopicID.Code, want*time.Millisecond)
	}
	if d, w := logs.count("DEBUG", "backing off"), logs.count("WARN", "backing off"); d != 1 || w != 1 {
		t.Fatalf("one streak logged %d times at DEBUG and %d at WARN, want once each", d, w)
	}
	p.fetched(0, 0)
	check(kerr.LeaderNotAvailable.Code, 20*time.Millisecond)
	check(kerr.NotLeaderForPartition.Code, 40*time.Millisecond)
	check(kerr.KafkaStorageError.Code, full)
	for range 100 { // no overflow however long the disagreement lasts
		p.delayAfter(full, kerr.FencedLeaderEpoch.Code, errors.New("x"), false)
	}
	check(kerr.UnknownLeaderEpoch.Code, full)
}

// A long poll ends by the time a partition left out of the fetch is due.
func TestFetchWaitEndsWhenABackoffDoes(t *testing.T) {
	f := &fetcher{m: &Manager{cfg: Config{MaxWait: 500 * time.Millisecond}}}
	wait := func(due time.Time) int32 {
		req, _, _ := f.buildFetch(nil, 0, due)
		return req.MaxWaitMillis
	}
	if got := wait(time.Time{}); got != 500 {
		t.Fatalf("nothing due: max wait %d ms, want 500", got)
	}
	if got := wait(time.Now().Add(time.Minute)); got != 500 {
		t.Fatalf("due in a minute: max wait %d ms, want 500", got)
	}
	if got := wait(time.Now().Add(20 * time.Millisecond)); got < 1 || got > 20 {
		t.Fatalf("due in 20 ms: max wait %d ms", got)
	}
	if got := wait(time.Now().Add(-time.Second)); got != 0 {
		t.Fatalf("overdue: max wait %d ms, want 0", got)
	}
}
