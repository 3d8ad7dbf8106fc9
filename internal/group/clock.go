package group

import "time"

// Clock is the coordinator's source of time and timers. The real one is
// the wall clock; unit tests use a fake that they advance by hand.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine after d (as time.AfterFunc).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc. Stop may lose the race with a firing
// timer, so callbacks re-check that they are still current.
type Timer interface {
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
