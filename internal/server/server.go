// Package server is the broker's network layer: it binds the listeners,
// runs one connection loop per client, frames and parses Kafka requests
// (header v1/v2, bodies decoded by kmsg), answers ApiVersions itself and
// hands every other request to a Handler, one at a time per connection.
// It holds no business logic.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the Config fields left zero.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
	DefaultMaxRequestBytes int32 = 104857600
	// DefaultQueuedMaxRequestBytes bounds the memory of requests in flight
	// (queued.max.request.bytes; Kafka's default, -1, is unbounded): room
	// for two requests of socket.request.max.bytes at once, or thousands
	// of ordinary ones, and a small part of any machine a broker runs on.
	DefaultQueuedMaxRequestBytes int64 = 256 << 20
	// DefaultMaxNonProduceRequestBytes caps the frames of every API but
	// Produce. The largest real ones are a follower's full Fetch (33 bytes
	// a partition: 1.7 MB for 50,000 partitions) and Metadata listing tens
	// of thousands of topics; decoding a frame may allocate up to
	// decodeFactor times its size, so the cap keeps that well inside the
	// default budget.
	DefaultMaxNonProduceRequestBytes int32 = 4 << 20
	// DefaultTransferTimeout and DefaultTransferMinRate make the transfer
	// rule: a request frame must arrive, and a response leave, within 30 s
	// of its first byte plus 1 s per MiB moved. 30 s is the default
	// request.timeout.ms of Kafka's clients, which give up on a request
	// after it anyway; 1 MiB/s (8 Mbit/s) lets a client that raised its
	// timeout send a 100 MiB request in 130 s.
	DefaultTransferTimeout       = 30 * time.Second
	DefaultTransferMinRate int64 = 1 << 20
)

// Listener is one named address to accept connections on.
type Listener struct {
	Name string
	Addr string // host:port, port may be 0
	// Listener, if set, is already bound (Addr is then ignored): the
	// CONTROLLER listener shares its port with Raft (package mux).
	Listener net.Listener
	// Unbudgeted connections are not charged to queued.max.request.bytes:
	// the controller listener's few, small requests (heartbeats) must get
	// through whatever clients hold.
	Unbudgeted bool
}

// Config configures a Server.
type Config struct {
	Listeners []Listener
	// MaxRequestBytes is socket.request.max.bytes: a frame announcing more
	// closes the connection before anything is allocated. Not positive
	// means DefaultMaxRequestBytes.
	MaxRequestBytes int32
	// ConnectionsMaxIdle is connections.max.idle.ms: a connection with no
	// request in progress and no traffic for this long is closed. Not
	// positive disables the check.
	ConnectionsMaxIdle time.Duration
	// QueuedMaxRequestBytes is queued.max.request.bytes, the broker-wide
	// budget for request memory in flight (see memPool). Zero means
	// DefaultQueuedMaxRequestBytes, negative unbounded.
	QueuedMaxRequestBytes int64
	// MaxNonProduceRequestBytes caps the frames of every API but Produce;
	// a larger one closes the connection once its API key is read. Zero
	// means DefaultMaxNonProduceRequestBytes, negative MaxRequestBytes.
	MaxNonProduceRequestBytes int32
	// TransferTimeout and TransferMinRate are the transfer rule for
	// request frames and responses (see transferRule). Zero means the
	// default; a negative TransferTimeout turns the rule off.
	TransferTimeout time.Duration
	TransferMinRate int64
	// CopyFileRegions reads the file regions of responses (Fetch's record
	// sets) through the connection's write buffer instead of sending them
	// with sendfile (weir.fetch.sendfile.enable=false): kept as a switch
	// and so that both paths are tested.
	CopyFileRegions bool
	// Limits are the connection limits; nil means none.
	Limits *ConnLimits
	// Observer, if set, is told of every request answered (request
	// metrics); it is called on the connection's goroutine, so it must
	// be quick.
	Observer RequestObserver
	// APIs maps an API key to the [min, max] versions the handler supports;
	// max is capped at kmsg's max. ApiVersions (18) is answered by the
	// server and added if missing, with kmsg's full range.
	APIs map[int16][2]int16
}

// Server accepts connections on its listeners and serves them.
type Server struct {
	cfg      Config
	versions *versionTable
	handler  Handler
	// advisor is handler's ProduceWaitAdvisor, nil if it is none.
	advisor   ProduceWaitAdvisor
	log       *slog.Logger
	listeners []boundListener
	pool      *memPool
	// unbudgeted counts the memory of Unbudgeted listeners' connections
	// without bounding it.
	unbudgeted *memPool
	quotas     *connQuotas
	frames     frameLimits
	bufs       *frameBufs     // request frame buffers, reused (framebuf.go)
	nonce      [nonceLen]byte // marks file regions' places while encoding (region.go)
	inlined    atomic.Int64   // requests a connection's reader answered itself (conn.inline)
	busy       atomic.Int64   // requests read and not yet answered, every connection
	quiet      chan struct{}  // signalled (without blocking) when busy drops to 0 while draining
	draining   atomic.Bool    // Drain was called: requests' ends signal quiet

	mu       sync.Mutex
	serving  bool
	closed   bool
	stopping chan struct{} // closed by Close
	conns    sync.WaitGroup
}

type boundListener struct {
	name       string
	ln         net.Listener
	unbudgeted bool
}

// New validates cfg and binds every listener, so that Addr is meaningful
// before Serve starts.
func New(cfg Config, h Handler, logger *slog.Logger) (*Server, error) {
	if h == nil {
		return nil, errors.New("new server: nil handler")
	}
	if len(cfg.Listeners) == 0 {
		return nil, errors.New("new server: no listeners")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = withDefaults(cfg)
	versions, err := newVersionTable(cfg.APIs)
	if err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	quotas, err := newConnQuotas(cfg.Limits, len(cfg.Listeners))
	if err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	advisor, _ := h.(ProduceWaitAdvisor)
	s := &Server{
		advisor:    advisor,
		cfg:        cfg,
		versions:   versions,
		handler:    h,
		log:        logger,
		pool:       newMemPool(cfg.QueuedMaxRequestBytes),
		unbudgeted: newMemPool(0),
		quotas:     quotas,
		frames: frameLimits{
			maxBytes:      cfg.MaxRequestBytes,
			maxNonProduce: cfg.MaxNonProduceRequestBytes,
			transfer:      transferRule{grace: cfg.TransferTimeout, rate: cfg.TransferMinRate},
		},
		bufs:     &frameBufs{},
		nonce:    newNonce(),
		stopping: make(chan struct{}),
		quiet:    make(chan struct{}, 1),
	}
	seen := make(map[string]bool, len(cfg.Listeners))
	for _, l := range cfg.Listeners {
		if seen[l.Name] {
			s.closeListeners()
			return nil, fmt.Errorf("new server: duplicate listener name %q", l.Name)
		}
		seen[l.Name] = true
		ln := l.Listener
		if ln == nil {
			var err error
			if ln, err = net.Listen("tcp", l.Addr); err != nil {
				s.closeListeners()
				return nil, fmt.Errorf("new server: listen %s on %s: %w", l.Name, l.Addr, err)
			}
		}
		s.listeners = append(s.listeners, boundListener{name: l.Name, ln: ln, unbudgeted: l.Unbudgeted})
	}
	return s, nil
}

// rawFetch reports whether file regions are sent with sendfile.
func (cfg Config) rawFetch() bool { return !cfg.CopyFileRegions }

// withDefaults fills in the Config fields left zero.
func withDefaults(cfg Config) Config {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	switch {
	case cfg.QueuedMaxRequestBytes == 0:
		cfg.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	case cfg.QueuedMaxRequestBytes < 0:
		cfg.QueuedMaxRequestBytes = -1
	}
	switch {
	case cfg.MaxNonProduceRequestBytes == 0:
		cfg.MaxNonProduceRequestBytes = DefaultMaxNonProduceRequestBytes
	case cfg.MaxNonProduceRequestBytes < 0:
		cfg.MaxNonProduceRequestBytes = cfg.MaxRequestBytes
	}
	cfg.MaxNonProduceRequestBytes = min(cfg.MaxNonProduceRequestBytes, cfg.MaxRequestBytes)
	if cfg.TransferTimeout == 0 {
		cfg.TransferTimeout = DefaultTransferTimeout
	}
	if cfg.TransferMinRate <= 0 {
		cfg.TransferMinRate = DefaultTransferMinRate
	}
	return cfg
}

// Addr returns the bound address of the named listener (with port 0
// resolved), or nil if there is no such listener.
func (s *Server) Addr(listener string) net.Addr {
	for _, l := range s.listeners {
		if l.name == listener {
			return l.ln.Addr()
		}
	}
	return nil
}

// OpenConnections counts the open connections by listener name.
func (s *Server) OpenConnections() map[string]int {
	return s.quotas.openByListener()
}

// ConnectionsCreated counts the connections admitted since start, by
// listener name.
func (s *Server) ConnectionsCreated() map[string]int64 {
	return s.quotas.createdByListener()
}

// MemoryPool is the request memory in flight (queued.max.request.bytes'
// pool) and its budget (-1: unbounded).
func (s *Server) MemoryPool() (used, budget int64) {
	budget = s.cfg.QueuedMaxRequestBytes
	if budget <= 0 {
		budget = -1
	}
	return s.pool.inUse(), budget
}

// Serve accepts and serves connections until ctx is done or Close is
// called; then it closes the listeners and every connection, waits for
// running handlers to return, and returns nil. It returns an error if an
// accept fails for good or if the server was already serving or closed.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.serving || s.closed {
		s.mu.Unlock()
		return errors.New("serve: server already serving or closed")
	}
	s.serving = true
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	go func() {
		select {
		case <-ctx.Done():
		case <-s.stopping:
			cancel()
		}
	}()

	errc := make(chan error, len(s.listeners))
	var accepts sync.WaitGroup
	for _, l := range s.listeners {
		accepts.Add(1)
		go func() {
			defer accepts.Done()
			if err := s.acceptLoop(ctx, l); err != nil {
				errc <- err
				cancel()
			}
		}()
	}
	<-ctx.Done()
	s.closeListeners()
	accepts.Wait()
	// Connections watch ctx and close themselves; wait for their
	// handlers so the caller may tear down what handlers use.
	s.conns.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// Close stops the server: listeners and connections are closed as if
// Serve's context were cancelled. It does not wait for handlers; Serve
// returns once they are done.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.stopping)
	if !s.serving {
		return s.closeListeners()
	}
	return nil
}

// StopAccepting closes the listeners and nothing else: new connections
// are refused (clients dial another broker, a retriable error), while
// the connections already open are served until Serve's context ends. A
// stopping broker calls it first, so that no connection opened while it
// stops is closed before its first request is answered: some clients
// (franz-go) take a connection closed before any answer for a SASL or
// TLS mismatch and fail the records, where a refused dial is retried.
func (s *Server) StopAccepting() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeListeners()
}

// Drain waits until no connection has a request in flight, or ctx ends;
// it reports whether that happened. Connections stay open and requests
// go on being read and answered meanwhile. A stopping broker that has
// handed its leaderships away calls it between StopAccepting and the end
// of Serve: the requests its clients already sent are answered, with the
// new leaders' names, rather than cut off with the connection.
func (s *Server) Drain(ctx context.Context) bool {
	// Set before busy is read: an answer after that read signals.
	s.draining.Store(true)
	for s.busy.Load() > 0 {
		select {
		case <-s.quiet:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func (s *Server) closeListeners() error {
	var errs []error
	for _, l := range s.listeners {
		if err := l.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("close listener %s: %w", l.name, err))
		}
	}
	return errors.Join(errs...)
}

// acceptLoop accepts connections on one listener until it is closed.
// Temporary failures (out of file descriptors) are retried with backoff,
// as one busy moment must not take the listener down.
func (s *Server) acceptLoop(ctx context.Context, l boundListener) error {
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "listener", l.name, "err", err, "backoff", backoff)
				t := time.NewTimer(backoff)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
				continue
			}
			return fmt.Errorf("accept on listener %s: %w", l.name, err)
		}
		backoff = 0
		// At max.connections the listener stops accepting until a
		// connection closes, as Kafka's acceptor does: this one waits
		// unread, the next ones in the kernel's accept queue.
		if err := s.quotas.acquire(ctx, l.name); err != nil {
			_ = nc.Close()
			return nil
		}
		c := newConn(ctx, s, l.name, nc)
		if l.unbudgeted {
			c.pool = s.unbudgeted
		}
		ip := remoteIP(nc.RemoteAddr())
		ok, limit, evict := s.quotas.admit(c, ip)
		if !ok {
			// Kafka closes such a connection at once, without a word.
			s.log.Info("connection refused: too many connections from this address",
				"listener", l.name, "remote", nc.RemoteAddr().String(), "limit", limit)
			c.cancel() // a refused connection's context must not linger
			_ = nc.Close()
			continue
		}
		if evict != nil {
			evict.shutdown("closed for an inter-broker connection (max.connections)", nil)
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer s.quotas.release(c, ip)
			c.serve()
		}()
	}
}

// isTemporary reports whether an accept error is worth retrying. The
// Temporary method is deprecated in general but still the signal net uses
// for EMFILE/ENFILE/ECONNABORTED on accept.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}
