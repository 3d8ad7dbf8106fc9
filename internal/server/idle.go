package server

// The idle rule (connections.max.idle.ms): a connection with no request
// in progress and no traffic for that long is closed.

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// idleLoop closes the connection once it has had no request in progress
// and no traffic for idle (connections.max.idle.ms).
func (c *conn) idleLoop(ctx context.Context, idle time.Duration) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.inflight.Load() > 0 {
			t.Reset(idle)
			continue
		}
		since := time.Since(time.Unix(0, c.lastActive.Load()))
		if since >= idle {
			c.shutdown("idle timeout", fmt.Errorf("no traffic for %v (connections.max.idle.ms %v)", since.Round(time.Millisecond), idle))
			return
		}
		t.Reset(idle - since)
	}
}

// activityReader records the time of every successful read, which is
// what the idle check measures.
type activityReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(time.Now().UnixNano())
	}
	return n, err
}
