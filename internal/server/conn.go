package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// readAhead bounds how many parsed requests may wait behind the one
	// being handled. Handling stays strictly sequential (Kafka mutes a
	// channel for the same reason: idempotent produce sequences must
	// arrive in order); reading ahead only hides network latency.
	readAhead = 8
	// readAheadBytes bounds the frame bytes read but not yet answered:
	// past it the reader waits, so large requests (up to
	// socket.request.max.bytes each) are not queued eight deep. One
	// request is always read while another is handled, whatever their
	// sizes: an idempotent producer keeps up to five requests of a few
	// MiB in flight, and reading the next while the worker appends the
	// previous is what those in-flight requests are for (with the reader
	// stopped at 1 MiB, reading and handling took turns).
	readAheadBytes = 1 << 20
	// ioBufferSize is the size of each connection's bufio reader and writer.
	ioBufferSize = 32 << 10
	// keepBufferMax: a response buffer grown beyond this is dropped after
	// use, so one large fetch does not pin memory for the connection's
	// life. It is, with the two I/O buffers, the memory an idle connection
	// keeps outside the request memory budget.
	keepBufferMax = 64 << 10
)

// errFrameSize is the protocol error for a size prefix outside
// [0, socket.request.max.bytes].
var errFrameSize = errors.New("request frame size out of bounds")

// conn is one client connection. Two goroutines serve it: a reader that
// frames and parses requests into a bounded queue, and the worker (the
// goroutine running serve) that handles them one at a time and writes the
// responses in order. When the worker is idle, the reader handles a
// Produce that does not wait for other brokers itself (see inline): one
// goroutine at a time answers, in order either way. An optional third
// closes the connection when idle.
type conn struct {
	s        *Server
	pool     *memPool // where its requests' memory is charged
	listener string
	nc       net.Conn
	log      *slog.Logger

	parent context.Context // ends with the server
	ctx    context.Context // ends with the connection
	cancel context.CancelFunc

	closeOnce   sync.Once
	closeReason string // set once, under closeOnce
	closeErr    error

	lastActive atomic.Int64  // unix nanoseconds of the last byte read or response written
	inflight   atomic.Int32  // requests read and not yet answered
	pending    atomic.Int64  // frame bytes read and not yet answered
	answered   chan struct{} // signalled (without blocking) after each answer
	served     atomic.Int64  // requests handled, for the close log
	peerGone   atomic.Bool   // the client closed its side; queued requests are still handled

	wbuf []byte        // response encoding buffer, reused by whichever goroutine answers
	bw   *bufio.Writer // the socket's writer, likewise
}

func newConn(parent context.Context, s *Server, listener string, nc net.Conn) *conn {
	c := &conn{s: s, pool: s.pool, listener: listener, nc: nc, answered: make(chan struct{}, 1), parent: parent}
	c.ctx, c.cancel = context.WithCancel(parent)
	c.log = s.log.With("listener", listener, "remote", nc.RemoteAddr().String())
	c.lastActive.Store(time.Now().UnixNano())
	return c
}

// serve runs the connection until the client leaves, a protocol error or
// handler error occurs, it idles out, or parent is cancelled. It returns
// only after the reader and any running handler have returned.
func (c *conn) serve() {
	parent, ctx := c.parent, c.ctx
	defer c.cancel()
	c.log.Debug("connection opened", "local", c.nc.LocalAddr().String())

	// Stopping the server cancels parent; close the socket so that a
	// reader blocked in Read and a worker blocked in Write wake up.
	stopWatch := context.AfterFunc(parent, func() { c.shutdown("server stopping", nil) })
	defer stopWatch()

	c.bw = bufio.NewWriterSize(c.nc, ioBufferSize)
	var helpers sync.WaitGroup
	queue := make(chan parsed, readAhead)
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		c.readLoop(ctx, queue)
	}()
	if idle := c.s.cfg.ConnectionsMaxIdle; idle > 0 {
		helpers.Add(1)
		go func() {
			defer helpers.Done()
			c.idleLoop(ctx, idle)
		}()
	}

	c.work(parent, ctx, queue)
	helpers.Wait()
	// Requests never answered no longer count as in flight.
	c.end(c.inflight.Load())
	c.log.Debug("connection closed", "reason", c.closeReason, "err", c.closeErr, "requests", c.served.Load())
}

// begin counts a request read as in flight, here and server-wide.
func (c *conn) begin() {
	c.inflight.Add(1)
	c.s.busy.Add(1)
}

// end counts n requests as no longer in flight, and tells Drain when
// none is left anywhere.
func (c *conn) end(n int32) {
	if n == 0 {
		return
	}
	c.inflight.Add(-n)
	if c.s.busy.Add(-int64(n)) == 0 && c.s.draining.Load() {
		select {
		case c.s.quiet <- struct{}{}:
		default:
		}
	}
}

// shutdown closes the connection once, recording the first reason given.
func (c *conn) shutdown(reason string, err error) {
	c.closeOnce.Do(func() {
		c.closeReason, c.closeErr = reason, err
		c.cancel()
		// The close error carries nothing useful: the peer may already be
		// gone, and we are discarding the connection either way.
		_ = c.nc.Close()
	})
}

// readLoop frames and parses requests until the connection ends or a
// request is unusable; an unusable one is queued as an error so that the
// requests before it are still answered in order, then reading stops.
// Each request's memory is reserved from the pool as its bytes arrive and
// returned when it is answered (or dropped).
func (c *conn) readLoop(ctx context.Context, queue chan<- parsed) {
	defer close(queue)
	fr := &frameReader{
		br:       bufio.NewReaderSize(activityReader{r: c.nc, last: &c.lastActive}, ioBufferSize),
		conn:     c.nc,
		limits:   c.s.frames,
		versions: c.s.versions,
		bufs:     c.s.bufs,
	}
	for {
		for c.inflight.Load() > 1 && c.pending.Load() >= readAheadBytes {
			select {
			case <-c.answered:
			case <-ctx.Done():
				return
			}
		}
		res := c.pool.reserve()
		p, err := c.readRequest(ctx, fr, res)
		if err != nil {
			held := res.size()
			res.release()
			switch {
			case errors.Is(err, io.EOF):
				// The peer is gone. Requests it sent before leaving are
				// still handled, as Kafka does: an acks=0 producer that
				// sends and exits must not lose its records. Their answers
				// are not written, and the handler context is cancelled so
				// that long polls for nobody end at once.
				c.peerGone.Store(true)
				c.cancel()
			case errors.Is(err, errTransferTooSlow):
				// What the frame held is back in the pool by now.
				c.log.Info("closing connection: request too slow", "err", err,
					"released_bytes", held, "pool_in_use", c.pool.inUse())
				c.shutdown("request too slow", err)
			default:
				// The socket failed, or we closed it (the reason is
				// already recorded).
				c.shutdown("read failed", err)
			}
			return
		}
		// Checked before this request counts as in flight: inline asks
		// whether any other is.
		inline := c.inline(p)
		c.begin()
		c.pending.Add(int64(p.size))
		p.res = res
		if inline {
			// Nothing is queued or being handled: the worker would only
			// take turns with this goroutine.
			c.s.inlined.Add(1)
			if !c.handle(c.parent, ctx, p) {
				return
			}
			continue
		}
		select {
		case queue <- p:
		case <-ctx.Done():
			res.release()
			return
		}
		if p.err != nil {
			// The worker answers what came before, then closes.
			return
		}
	}
}

// inline reports whether the reader answers p itself instead of queuing
// it for the worker: a Produce that does not wait on other brokers (acks
// 0 or 1, or acks=-1 where the handler advises so) when the worker is
// idle. The hand-off costs a wake-up on another core and the request's
// bytes read there again from a cold cache, where the reader has just
// checked them. Reading the next request while the worker appends this
// one would overlap the two, but on 2 cores the hand-off cost more than
// the overlap won, for a client that pipelines too: with five Produce
// requests of 1 MB in flight, answering on the reader took 12-25% less
// broker CPU per GB and moved 5-20% more (alternating runs, 6 of 6
// pairs). Meanwhile the kernel's socket buffer holds what the client
// sends next. A Produce that may wait for followers goes to the worker,
// so that the reader goes on reading while it waits.
func (c *conn) inline(p parsed) bool {
	if p.err != nil || c.inflight.Load() != 0 {
		return false
	}
	req, ok := p.req.(*kmsg.ProduceRequest)
	if !ok {
		return false
	}
	if req.Acks == 0 {
		return true
	}
	if c.s.advisor == nil {
		return req.Acks != -1
	}
	return !c.s.advisor.ProduceMayWait(req)
}

// readRequest reads and parses one request. Protocol errors come back
// inside parsed (answered in order, then the connection closes); the error
// return is for the stream itself: end, failure, or a transfer too slow.
func (c *conn) readRequest(ctx context.Context, fr *frameReader, res *reservation) (parsed, error) {
	fm, err := fr.next(ctx, res)
	switch {
	case errors.Is(err, errFrameSize), errors.Is(err, errMalformedHeader),
		errors.Is(err, errMalformedBody), errors.Is(err, errTooCostly):
		return parsed{err: err, size: len(fr.buf)}, nil
	case err != nil:
		return parsed{}, err
	}
	// Decoding allocates: charge it before, the Produce scan's count or
	// the worst case for other APIs, then lower the charge to what the
	// decoded request holds. The reservation may take the pool's
	// overdraft until here, then others may.
	cost := fm.produceCost
	if cost < 0 {
		cost = decodeFactor * int64(len(fm.buf))
	}
	if err := fr.growCost(cost); err != nil {
		return parsed{}, err
	}
	p := c.parse(fm.buf)
	p.received = time.Now()
	p.size = len(fm.buf)
	p.fb = fm.fb
	p.checked = fm.checked
	held := int64(cap(fm.buf))
	if p.req != nil {
		if fm.produceCost >= 0 {
			held += fm.produceCost
		} else {
			held += decodedSize(p.req)
		}
	}
	res.shrinkTo(held)
	res.settle()
	return p, nil
}

// parse runs parseRequest, turning a panic in decoding into an error for
// this connection alone.
func (c *conn) parse(frame []byte) (p parsed) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("panic decoding request", "panic", r, "stack", string(debug.Stack()))
			p = parsed{err: fmt.Errorf("panic decoding request: %v", r)}
		}
	}()
	return parseRequest(frame, c.s.versions)
}

// work handles queued requests in arrival order and writes each response
// before taking the next request. parent ends with the server; ctx, the
// handlers' context, also ends when the client goes away.
func (c *conn) work(parent, ctx context.Context, queue <-chan parsed) {
	defer func() {
		// Drain so a reader blocked on a full queue can finish, and
		// return the memory of requests that will not be answered.
		for p := range queue {
			p.res.release()
		}
	}()
	for p := range queue {
		if !c.handle(parent, ctx, p) {
			return
		}
	}
	// The reader closes the queue when the client left (everything it
	// sent is handled by now) or after a shutdown.
	if c.peerGone.Load() {
		c.shutdown("closed by client", nil)
		return
	}
	c.shutdown("reader stopped", nil)
}

// handle answers one request (queued, or taken by the reader) and returns
// its memory; false means the connection is done.
func (c *conn) handle(parent, ctx context.Context, p parsed) bool {
	defer p.res.release()
	defer c.recycle(p)
	if parent.Err() != nil {
		c.shutdown("server stopping", nil)
		return false
	}
	if p.err != nil {
		if errors.Is(p.err, errFrameSize) {
			c.log.Warn("closing connection on protocol error", "err", p.err)
		} else {
			c.log.Warn("closing connection on protocol error",
				"api_key", p.hdr.APIKey, "api_version", p.hdr.APIVersion,
				"correlation_id", p.hdr.CorrelationID, "client_id", p.hdr.ClientID, "err", p.err)
		}
		c.shutdown("protocol error", p.err)
		return false
	}
	rc := &RequestContext{
		ClientID:      p.hdr.ClientID,
		CorrelationID: p.hdr.CorrelationID,
		Listener:      c.listener,
		RemoteAddr:    c.nc.RemoteAddr(),
		LocalAddr:     c.nc.LocalAddr(),
		// p.res's release is idempotent: handle releases it again.
		ReleaseRequest: p.res.release,
		checked:        p.checked,
	}
	started := time.Now()
	resp, reason, err := c.respond(ctx, rc, p)
	handled := time.Now()
	// File regions are pinned until written, or dropped unwritten.
	defer releaseRegions(resp)
	switch {
	case err != nil && c.peerGone.Load() && ctx.Err() != nil:
		// A handler that gave up because its client left is no
		// protocol error: go on with the requests queued after it.
		resp = nil
	case err != nil:
		c.shutdown(reason, err)
		return false
	}
	respBytes := 0
	if resp != nil && !c.peerGone.Load() {
		var err error
		if respBytes, err = c.writeResponse(c.bw, p.hdr, resp); err != nil {
			if errors.Is(err, errTransferTooSlow) {
				c.log.Info("closing connection: response not read in time", "err", err)
			}
			c.shutdown("write failed", err)
			return false
		}
	}
	c.served.Add(1)
	now := time.Now()
	if c.s.cfg.Observer != nil {
		c.s.cfg.Observer.RequestDone(Answered{
			APIKey: p.hdr.APIKey, APIVersion: p.hdr.APIVersion, Subname: rc.subname,
			RequestBytes: p.size, ResponseBytes: respBytes, Response: resp,
			Times: requestTimes(p.received, started, handled, now, time.Duration(rc.remote.Load())),
		})
	}
	c.lastActive.Store(now.UnixNano())
	c.end(1)
	c.pending.Add(-int64(p.size))
	select {
	case c.answered <- struct{}{}:
	default:
	}
	return true
}

// requestTimes splits a request's life, from its last byte read through
// its handling to its response written, into Kafka's request times. The
// handler's waits (remote) are capped at its time: waits on goroutines
// of its own could overlap.
func requestTimes(received, started, handled, written time.Time, remote time.Duration) RequestTimes {
	handler := handled.Sub(started)
	remote = min(max(remote, 0), handler)
	return RequestTimes{
		Queue:  started.Sub(received),
		Local:  handler - remote,
		Remote: remote,
		Send:   written.Sub(handled),
		Total:  written.Sub(received),
	}
}

// recycle puts a handled request's frame buffer back in the pool when
// nothing can refer to it any more: only a Produce request's, whose
// batches the log has copied by the time it is answered (see frameBufs).
func (c *conn) recycle(p parsed) {
	if _, ok := p.req.(*kmsg.ProduceRequest); ok {
		c.s.bufs.put(p.fb)
	}
}

// respond produces the response for one parsed request: ApiVersions is
// answered here, everything else by the Handler. A handler panic or error
// is returned with the reason to log; the connection then closes.
func (c *conn) respond(ctx context.Context, rc *RequestContext, p parsed) (resp kmsg.Response, reason string, err error) {
	if p.apiVersionsFallback {
		c.log.Debug("ApiVersions version unsupported; answering in v0 format",
			"api_version", p.hdr.APIVersion, "client_id", p.hdr.ClientID)
		return c.s.versions.apiVersionsResponse(0, true), "", nil
	}
	if p.hdr.APIKey == apiVersionsKey {
		return c.s.versions.apiVersionsResponse(p.hdr.APIVersion, false), "", nil
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panic", "api_key", p.hdr.APIKey, "api_version", p.hdr.APIVersion,
				"panic", r, "stack", string(debug.Stack()))
			resp, reason, err = nil, "handler panic", fmt.Errorf("handler panic: %v", r)
		}
	}()
	resp, err = c.s.handler.Handle(ctx, rc, p.req)
	if err != nil {
		return nil, "handler error", fmt.Errorf("handle %s v%d: %w",
			kmsg.NameForKey(p.hdr.APIKey), p.hdr.APIVersion, err)
	}
	if resp == nil {
		return nil, "", nil
	}
	if resp.Key() != p.hdr.APIKey {
		return nil, "handler error", fmt.Errorf("handler answered %s with a %s response",
			kmsg.NameForKey(p.hdr.APIKey), kmsg.NameForKey(resp.Key()))
	}
	// The response is encoded at the request's version whatever the
	// handler left in it: the client decodes by the version it sent.
	resp.SetVersion(p.hdr.APIVersion)
	return resp, "", nil
}
