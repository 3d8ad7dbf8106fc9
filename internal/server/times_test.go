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
	mu       sync.Mutex
	times    map[int16][]RequestTimes
	answered map[int16][]Answered
}

func newTimesObserver() *timesObserver {
	return &timesObserver{times: map[int16][]RequestTimes{}, answered: map[int16][]Answered{}}
}

func (o *timesObserver) RequestDone(a Answered) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.times[a.APIKey] = append(o.times[a.APIKey], a.Times)
	a.Response = nil // not to be kept
	o.answered[a.APIKey] = append(o.answered[a.APIKey], a)
}

func (o *timesObserver) get(key int16) []RequestTimes {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]RequestTimes(nil), o.times[key]...)
}

func (o *timesObserver) getAnswered(key int16) []Answered {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Answered(nil), o.answered[key]...)
}

// TestObserverSeesFrameSizesAndSubname: the observer is told each
// frame's size as its size prefix says, the request's and the
// response's, and the name the handler gave the request.
func TestObserverSeesFrameSizesAndSubname(t *testing.T) {
	h := newTestHandler()
	h.hold = time.Millisecond
	h.bigTopics = 3
	obs := newTimesObserver()
	ts := startServer(t, h, func(c *Config) { c.Observer = obs })
	c := dial(t, ts.addr)
	md := encodeRequest(kmsg.NewPtrMetadataRequest(), 4, 1, nil)
	lo := encodeRequest(kmsg.NewPtrListOffsetsRequest(), 1, 2, nil)
	send(t, c, md, lo)
	_, mdBody := readResponse(t, c)
	_, loBody := readResponse(t, c)
	waitUntil(t, "both requests observed", func() bool { return len(obs.getAnswered(2)) == 1 && len(obs.getAnswered(3)) == 1 })
	for _, x := range []struct {
		got        Answered
		req        []byte
		respBody   []byte
		subname    string
		apiVersion int16
	}{
		{obs.getAnswered(3)[0], md, mdBody, "", 4},
		{obs.getAnswered(2)[0], lo, loBody, "ListOffsetsHeld", 1},
	} {
		// The frames read by the test lack their size prefix; the
		// response's also its correlation id.
		if x.got.RequestBytes != len(x.req)-4 || x.got.ResponseBytes != len(x.respBody)+4 {
			t.Errorf("api %d: told request %d and response %d bytes, frames of %d and %d",
				x.got.APIKey, x.got.RequestBytes, x.got.ResponseBytes, len(x.req)-4, len(x.respBody)+4)
		}
		if x.got.Subname != x.subname || x.got.APIVersion != x.apiVersion {
			t.Errorf("api %d: subname %q version %d, want %q %d", x.got.APIKey, x.got.Subname, x.got.APIVersion, x.subname, x.apiVersion)
		}
	}
}

// TestObserverSeesHandlerWaitsAsRemoteTime: what a handler tells
// RequestContext.Waited is the request's remote time, the rest of its
// time local, and the parts add up to the total.
func TestObserverSeesHandlerWaitsAsRemoteTime(t *testing.T) {
	h := newTestHandler()
	h.hold = 50 * time.Millisecond
	obs := newTimesObserver()
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
