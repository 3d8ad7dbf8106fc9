package server

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRequestTimesAddUp(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, c := range []struct {
		name   string
		remote time.Duration
		want   RequestTimes
	}{
		{"no wait", 0, RequestTimes{Queue: 2 * time.Millisecond, Local: 10 * time.Millisecond, Send: 3 * time.Millisecond, Total: 15 * time.Millisecond}},
		{"a wait", 6 * time.Millisecond, RequestTimes{Queue: 2 * time.Millisecond, Local: 4 * time.Millisecond, Remote: 6 * time.Millisecond, Send: 3 * time.Millisecond, Total: 15 * time.Millisecond}},
		// Overlapping waits cannot make local time negative.
		{"waits past the handler's time", time.Second, RequestTimes{Queue: 2 * time.Millisecond, Remote: 10 * time.Millisecond, Send: 3 * time.Millisecond, Total: 15 * time.Millisecond}},
	} {
		got := requestTimes(at(0), at(2), at(12), at(15), c.remote)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if got.Queue+got.Local+got.Remote+got.Send != got.Total {
			t.Errorf("%s: parts of %+v do not add up to the total", c.name, got)
		}
	}
}

// timesObserver records what the server reports.
type timesObserver struct {
	mu    sync.Mutex
	times map[int16][]RequestTimes
}

func (o *timesObserver) RequestDone(key, _ int16, _ int, t RequestTimes) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.times[key] = append(o.times[key], t)
}

func (o *timesObserver) get(key int16) []RequestTimes {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]RequestTimes(nil), o.times[key]...)
}

// TestObserverSeesHandlerWaitsAsRemoteTime: what a handler tells
// RequestContext.Waited is the request's remote time, the rest of its
// time local, and the parts add up to the total.
func TestObserverSeesHandlerWaitsAsRemoteTime(t *testing.T) {
	h := newTestHandler()
	h.hold = 50 * time.Millisecond
	obs := &timesObserver{times: map[int16][]RequestTimes{}}
	ts := startServer(t, h, func(c *Config) { c.Observer = obs })
	c := dial(t, ts.addr)
	send(t, c, encodeRequest(kmsg.NewPtrListOffsetsRequest(), 1, 1, nil), encodeRequest(kmsg.NewPtrMetadataRequest(), 4, 2, nil))
	readResponse(t, c)
	readResponse(t, c)
	waitUntil(t, "both requests observed", func() bool { return len(obs.get(2)) == 1 && len(obs.get(3)) == 1 })
	lo, md := obs.get(2)[0], obs.get(3)[0]
	if lo.Remote < h.hold {
		t.Errorf("ListOffsets waited %v, remote time %v", h.hold, lo.Remote)
	}
	if md.Remote != 0 {
		t.Errorf("Metadata waited for nothing, remote time %v", md.Remote)
	}
	// Metadata was read while ListOffsets held the connection's worker.
	if md.Queue <= 0 {
		t.Errorf("Metadata queued behind a 50 ms request for %v", md.Queue)
	}
	for _, rt := range []RequestTimes{lo, md} {
		if rt.Local < 0 || rt.Queue+rt.Local+rt.Remote+rt.Send != rt.Total {
			t.Errorf("times %+v do not add up", rt)
		}
	}
}
