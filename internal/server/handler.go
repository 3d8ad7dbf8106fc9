package server

// What the server asks of the broker: the Handler that serves requests,
// the observer told of each answer, and the context a handler gets.

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler serves decoded requests.
type Handler interface {
	// Handle serves one decoded request. A nil response with nil error means
	// "send nothing" (Produce with acks=0). An error closes the connection.
	Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)
}

// ProduceWaitAdvisor is implemented by a Handler that can tell, before
// handling it, whether an acks 1 or -1 Produce may wait (for other
// brokers, or for a leadership to move). The connection's reader answers
// one that cannot itself, as it does acks 0 (see conn.inline), saving
// the hand-off to the worker; without an advisor, acks 1 is taken as not
// waiting and acks=-1 as waiting. The advice
// only places the work: a Produce advised wrongly as not waiting still
// gets its right answer, but holds the reader while it waits, so reading
// ahead pauses for that time.
type ProduceWaitAdvisor interface {
	ProduceMayWait(req *kmsg.ProduceRequest) bool
}

// RequestObserver learns of every request answered: the one place the
// request metrics are taken. It is owned here so that this package needs
// no metrics library.
type RequestObserver interface {
	// RequestDone is called once a request has been answered (its
	// response written, or none sent for acks=0).
	RequestDone(a Answered)
}

// Answered is one answered request, as the observer sees it.
type Answered struct {
	APIKey, APIVersion int16
	// Subname is the name the handler gave the request beside its API's
	// (RequestContext.SetSubname): Kafka's FetchConsumer or FetchFollower
	// for a Fetch; empty for most.
	Subname string
	// RequestBytes and ResponseBytes are the frames' sizes, as their size
	// prefixes say (header and body, not the prefix itself);
	// ResponseBytes is 0 when no response was written.
	RequestBytes, ResponseBytes int
	// Response is what the handler answered (nil for none): for the
	// observer to read, during the call only, never to change or keep.
	// A Fetch's may be a RegionResponse wrapping the kmsg response.
	Response kmsg.Response
	Times    RequestTimes
}

// RequestTimes are one request's times, split as Kafka's RequestMetrics
// split them. They add up: Queue + Local + Remote + Send = Total.
type RequestTimes struct {
	// Queue runs from the request's last byte read to its handling:
	// requests read ahead wait behind the one handled.
	Queue time.Duration
	// Local is the handler's own work: its time less Remote.
	Local time.Duration
	// Remote is the time the handler waited for other brokers or for
	// data (acks=-1, long polls, group commits), as told to
	// RequestContext.Waited.
	Remote time.Duration
	// Send is the time to write the response.
	Send time.Duration
	// Total runs from the request's last byte read to its response
	// written.
	Total time.Duration
}

// RequestContext describes where a request came from.
type RequestContext struct {
	ClientID      string
	CorrelationID int32
	Listener      string // listener name the connection came in on
	RemoteAddr    net.Addr
	LocalAddr     net.Addr
	// ReleaseRequest returns the request's memory (its frame and decoded
	// form) to queued.max.request.bytes early, for a handler that no
	// longer needs them before it answers: a produce waiting for acks=-1
	// after its append must not keep other clients' (and followers')
	// requests from being read. The request must not be used after.
	ReleaseRequest func()

	// remote adds up the nanoseconds the handler waited (Waited).
	remote atomic.Int64
	// subname is what SetSubname set.
	subname string
	// checked is what the Produce scan validated (CheckedRecords).
	checked checkedRecords
}

// Waited adds d to the time the handler spent waiting for other brokers,
// for data or for other clients, which the request metrics count as
// remote rather than local time. The handler's one wait clock calls it
// (the broker puts rc in the request's context with waitclock.With); it
// is safe from any goroutine.
func (rc *RequestContext) Waited(d time.Duration) { rc.remote.Add(int64(d)) }

// SetSubname names the request for the request metrics beside its API's
// name, as Kafka counts a Fetch also as FetchConsumer or FetchFollower:
// the handler knows which it is without the server reading the body
// again. Call it on the handler's goroutine, before it returns.
func (rc *RequestContext) SetSubname(name string) { rc.subname = name }
