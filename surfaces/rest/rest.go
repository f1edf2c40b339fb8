// Package rest is grantwire's HTTP surface, run by `grantwire serve`: the REST API of
// docs/behaviour.md#rest (connectors, grants, activations, forwarded connections, browser
// authorizations), server-sent events of every connector.* change (including changes other
// processes make), an OpenAPI 3.1 document, and the Settings → Connectors page, embedded.
//
// It owns HTTP only: request checks (the X-Grantwire-UI header on every mutating route,
// the Host header, Origin, an optional bearer token), JSON shapes, status codes, the
// per-server registry of authorizations waiting for the browser, and the fan-out of events
// to subscribers. Every decision is the policy's: each route calls a method of a
// *grantwire.Client (an operation), and maps its *grantwire.Error to the REST status the
// policy publishes.
//
// It imports the module root (the Go API), hostabi (events) and catalog (display data);
// nothing in the module imports it but cmd/grantwire.
package rest

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
)

// UIHeader must be "1" on every mutating request (POST, PUT, DELETE): a browser sends a
// custom header only from a page of the same origin (or after a CORS preflight, which
// this server never grants), so a form or a script of another site cannot act.
const UIHeader = "X-Grantwire-UI"

// EventSource is where events come from: the OS shell's bus (shells/native.Bus), which
// also carries the activations and grants other processes change (its watcher runs the
// policy's activation_changes and grant_changes). Subscribe returns a channel and a
// function ending the subscription.
type EventSource interface {
	Subscribe(buffer int) (<-chan hostabi.Event, func())
}

// Config configures a server. Client is required; zero values mean the documented defaults.
type Config struct {
	// Client runs every operation (grantwire.Open, or the CLI's client).
	Client *grantwire.Client
	// Events feeds GET /api/connectors/events; nil serves a stream of heartbeats only.
	Events EventSource
	// Token, when set, is required as "Authorization: Bearer <token>" on every API route
	// (the page itself loads without it and asks for it). Binding an address that is not
	// loopback needs one.
	Token string
	// AllowedHosts are further Host header values accepted (host or host:port; the port of
	// the listener is added when missing). Loopback binds accept their address and
	// localhost:<port> without this.
	AllowedHosts []string
	// LookPath finds a local MCP server's command for POST /{id}/test (default: none is
	// looked for).
	LookPath func(string) (string, error)
	// Log receives one line per request and every failure (default: discarded). It never
	// receives a request body, a query string or a secret.
	Log *slog.Logger
	// Heartbeat is the interval of SSE comments that keep idle streams open (default 15 s).
	Heartbeat time.Duration
	// SubscriberBuffer bounds each SSE subscriber's queue (default 64 events); a
	// subscriber that falls behind loses events and is sent events.dropped instead.
	SubscriberBuffer int
	// FlowTimeout bounds an authorization's wait for the browser (default 5 minutes).
	FlowTimeout time.Duration
	// Health runs the health pass (Client.Maintain) while the server runs: at start, when
	// the policy says the next pass is due, and after every connector change it hears of.
	Health bool
}

// Server is a running grantwire HTTP surface.
type Server struct {
	cfg      Config
	client   *grantwire.Client
	log      *slog.Logger
	ln       net.Listener
	url      string
	hosts    map[string]bool
	origins  map[string]bool
	http     *http.Server
	mux      *http.ServeMux
	hub      *hub
	flows    *flowRegistry
	base     context.Context
	stop     context.CancelFunc
	feedDone chan struct{}
	once     sync.Once

	healthWake chan struct{}
	healthDone chan struct{}
}

//go:embed web openapi.json
var assets embed.FS

// ErrNeedsToken is returned by Listen for an address that is not loopback without a token.
var ErrNeedsToken = errors.New("rest: binding an address other than loopback needs a bearer token")

// Listen binds addr ("127.0.0.1:0" when empty) and returns a server ready to Serve. An
// address that is not a loopback IP or "localhost" is refused unless cfg.Token is set.
func Listen(addr string, cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("rest: Config.Client is required")
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rest: address %q: %w", addr, err)
	}
	loopback := cfg.Client.Engine().Manifest().Loopback.IsHost(host) // the policy's rule
	if !loopback && cfg.Token == "" {
		return nil, fmt.Errorf("%w (%s)", ErrNeedsToken, addr)
	}
	if cfg.Token != "" && len(cfg.Token) < 32 {
		return nil, errors.New("rest: a bearer token needs at least 32 characters")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return newServer(ln, cfg), nil
}

func newServer(ln net.Listener, cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.SubscriberBuffer <= 0 {
		cfg.SubscriberBuffer = 64
	}
	if cfg.FlowTimeout <= 0 {
		cfg.FlowTimeout = 5 * time.Minute
	}
	tcp := ln.Addr().(*net.TCPAddr)
	port := strconv.Itoa(tcp.Port)
	s := &Server{cfg: cfg, client: cfg.Client, log: cfg.Log, ln: ln, hosts: map[string]bool{}, origins: map[string]bool{}}
	bound := net.JoinHostPort(tcp.IP.String(), port)
	if !tcp.IP.IsUnspecified() {
		s.allowHost(bound)
	} else {
		s.allowHost("127.0.0.1:" + port) // every address: loopback included
	}
	if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
		s.allowHost("localhost:" + port)
	}
	for _, h := range cfg.AllowedHosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
		s.allowHost(h)
	}
	s.url = "http://" + bound
	if tcp.IP.IsUnspecified() {
		s.url = "http://" + net.JoinHostPort("127.0.0.1", port)
	}
	s.base, s.stop = context.WithCancel(context.Background())
	s.hub = newHub(cfg.SubscriberBuffer)
	s.flows = newFlowRegistry()
	s.mux = s.routes()
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.base },
	}
	s.http.RegisterOnShutdown(func() { s.hub.close() })
	s.feedDone = make(chan struct{})
	s.healthWake = make(chan struct{}, 1)
	s.healthDone = make(chan struct{})
	go s.feed()
	if cfg.Health {
		go s.healthLoop()
	} else {
		close(s.healthDone)
	}
	return s
}

func (s *Server) allowHost(h string) {
	h = strings.ToLower(h)
	s.hosts[h] = true
	s.origins["http://"+h] = true
}

// URL is the server's base URL (http://127.0.0.1:PORT for a loopback bind).
func (s *Server) URL() string { return s.url }

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting requests, ends every event stream (subscribers see the stream
// close), cancels every authorization still waiting for the browser (nothing is stored for
// them), and waits for requests in progress until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		s.flows.cancelAll()
		err = s.http.Shutdown(ctx)
		s.hub.close()
		s.stop()
		s.flows.wait(ctx)
		<-s.feedDone
		<-s.healthDone
	})
	return err
}

// ServeHTTP checks every request before routing it: for a mutating method the UI header
// first (403, before anything is read), then the Host header (421: a DNS-rebinding page
// sends its own host name), the Origin a browser sends (403 for another origin), and the
// bearer token when one is configured (401). No CORS header is ever sent.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.serve(rec, r)
	s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "ms", time.Since(start).Milliseconds())
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if mutating(r.Method) && r.Header.Get(UIHeader) != "1" {
		s.problem(w, "UI_HEADER_REQUIRED", "every POST, PUT and DELETE needs the header "+UIHeader+": 1 (nothing was done)",
			"send the header "+UIHeader+": 1 with the request (curl -H '"+UIHeader+": 1' …), or use the page at "+s.url)
		return
	}
	if !s.hosts[strings.ToLower(r.Host)] {
		s.problem(w, "MISDIRECTED", "this server answers only requests addressed to "+s.url, "open "+s.url)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.origins[strings.ToLower(o)] {
		s.problem(w, "FOREIGN_ORIGIN", "requests from other origins are refused (no CORS)", "open "+s.url+" and use the page served there")
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		s.problem(w, "FOREIGN_ORIGIN", "requests from other sites are refused (no CORS)", "open "+s.url+" and use the page served there")
		return
	}
	if r.Method == http.MethodOptions {
		h.Set("Allow", "GET, POST, PUT, DELETE")
		s.problem(w, "METHOD_NOT_ALLOWED", "OPTIONS is not served: this server grants no cross-origin access", "")
		return
	}
	if s.cfg.Token != "" && !isPage(r.URL.Path) && !s.tokenOK(r) {
		h.Set("WWW-Authenticate", `Bearer realm="grantwire"`)
		s.problem(w, "TOKEN_REQUIRED", "this server needs its bearer token (Authorization: Bearer <token>)", "")
		return
	}
	handler, pattern := s.mux.Handler(r)
	if pattern == "" {
		// ServeMux's own 404 and 405 answers, as JSON problems.
		probe := &statusWriter{ResponseWriter: discardWriter{header: http.Header{}}, status: http.StatusOK}
		handler.ServeHTTP(probe, r)
		if allow := probe.Header().Get("Allow"); allow != "" {
			h.Set("Allow", allow)
		}
		if probe.status == http.StatusMethodNotAllowed {
			s.problem(w, "METHOD_NOT_ALLOWED", r.Method+" is not allowed here", "")
			return
		}
		s.problem(w, "NOT_FOUND", "no such route: "+r.URL.Path, "")
		return
	}
	s.mux.ServeHTTP(w, r) // (the mux sets the path values)
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// isPage reports the paths of the page and its assets, which load without the token.
func isPage(path string) bool {
	return path == "/" || strings.HasPrefix(path, "/assets/")
}

func (s *Server) tokenOK(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// statusWriter records the status a handler wrote; it passes Flush through (SSE).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
