// Package console is weir's built-in web console: server-rendered pages
// over the cluster's state (brokers, topics, partitions, records, consumer
// groups) and a few actions (create/delete topic, add partitions, edit
// topic configs, reset a group's offsets). It reaches the cluster only
// through a Kafka client, so everything it shows or does is what any
// Kafka client could see or do; its one state of its own is the last
// minutes of the broker's byte counters, for the throughput graph.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config is what the console needs from the process that runs it.
type Config struct {
	// Client is connected to the broker's own client listener; the
	// console does not close it.
	Client *kgo.Client
	// Seeds are the addresses the message browser's short-lived
	// consumers dial (the same listener as Client's).
	Seeds  []string
	Logger *slog.Logger
	// RequestTimeout bounds each page's Kafka requests (default 10 s).
	RequestTimeout time.Duration
	// ListenHost is console.listener's host. Unless it is a wildcard
	// (0.0.0.0, ::), a request must name an IP address, localhost or
	// ListenHost itself in its Host header: a page of another site whose
	// name was made to resolve to 127.0.0.1 (DNS rebinding) would
	// otherwise be same-origin with the console and pass its CSRF check.
	ListenHost string
	// NodeID is the broker the console runs in (the throughput graph's
	// label).
	NodeID int32
	// Traffic, if set, reads this broker's record bytes in and out so
	// far; the overview graphs their rates (throughput.go).
	Traffic func() (in, out int64)
}

// Server serves the console's pages.
type Server struct {
	cfg   Config
	adm   *kadm.Client
	log   *slog.Logger
	pages map[string]*template.Template
	csrf  *csrf
	mux   *http.ServeMux
	// traffic holds the Traffic samples, while Serve runs.
	traffic *ring
}

// New builds the console; it serves nothing until Serve or Handler.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("console: no Kafka client")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	c, err := newCSRF()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, adm: kadm.NewClient(cfg.Client), log: cfg.Logger, csrf: c, pages: map[string]*template.Template{},
		traffic: newRing(trafficSamples)}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// parseTemplates gives each page its own set: the layout plus the page's
// file, so every page defines the same "content" block.
func (s *Server) parseTemplates() error {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return fmt.Errorf("console templates: %w", err)
	}
	for _, n := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return fmt.Errorf("console template %s: %w", page, err)
		}
		s.pages[page] = t
	}
	return nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", s.overview)
	m.HandleFunc("GET /topics", s.topics)
	m.HandleFunc("GET /topics/{topic}", s.topic)
	m.HandleFunc("GET /topics/{topic}/messages", s.messages)
	m.HandleFunc("GET /groups", s.groups)
	m.HandleFunc("GET /groups/{group}", s.group)
	m.HandleFunc("POST /topics", s.createTopic)
	m.HandleFunc("POST /topics/{topic}/delete", s.deleteTopic)
	m.HandleFunc("POST /topics/{topic}/configs", s.alterConfigs)
	m.HandleFunc("POST /topics/{topic}/partitions", s.addPartitions)
	m.HandleFunc("POST /groups/{group}/reset", s.resetOffsets)
	s.mux = m
}

// Handler is the console's HTTP handler: every POST must carry the CSRF
// token, and every response forbids framing and outside scripts.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "421 misdirected request: the console answers only to its own address", http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodPost && !s.csrf.check(r) {
			http.Error(w, "403 forbidden: missing or wrong CSRF token (reload the page and try again)", http.StatusForbidden)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// hostAllowed checks a request's Host header (see Config.ListenHost).
func (s *Server) hostAllowed(hostport string) bool {
	bind := s.cfg.ListenHost
	if ip := net.ParseIP(bind); bind == "" || (ip != nil && ip.IsUnspecified()) {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") || strings.EqualFold(host, bind)
}

// Serve serves the console on ln until ctx is cancelled, then shuts the
// HTTP server down (requests in flight get a few seconds). While it runs
// it samples Config.Traffic.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfg.Traffic != nil {
		sctx, stop := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			s.sampleTraffic(sctx)
		}()
		defer func() {
			stop()
			<-sampled
		}()
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutCtx)
	if err != nil {
		err = errors.Join(err, srv.Close())
	}
	<-done
	if err != nil {
		return fmt.Errorf("console shutdown: %w", err)
	}
	return nil
}

// reqCtx bounds the Kafka requests of one page.
func (s *Server) reqCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
}
