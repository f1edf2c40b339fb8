package mcpremote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grantwire/grantwire"
	gwmcp "github.com/grantwire/grantwire/mcp"
)

// ProxyOptions configure Proxy.
type ProxyOptions struct {
	// Server is the remote MCP server's id; Agent the agent the proxy serves.
	Server, Agent string
	// In and Out are the stdio side (the MCP client's pipe).
	In  io.ReadCloser
	Out io.WriteCloser
	// Timeout bounds the wait for the browser when the server must be authorized.
	Timeout time.Duration
	// HTTPClient sends the MCP requests (default HTTPClient(c)).
	HTTPClient *http.Client
	// OnError, when set, is told every error met after the gate while forwarding (a
	// refused or unreachable server, an authorization that could not be made), besides the
	// JSON-RPC error the MCP client gets: the CLI writes each on stderr.
	OnError func(error)
}

// ErrGate wraps the policy's refusal to let the agent use the server.
var ErrGate = errors.New("mcpremote: the agent may not use this server")

// Proxy serves an MCP client on stdio and forwards every message to the remote server's
// streamable-HTTP endpoint with the agent's bearer token (the job mcp-remote does, gated).
// The gate is checked before anything is served: an agent that is not granted and active
// gets the policy's error (with the command that fixes it) and nothing is forwarded; it is
// checked again for every request, so a revoked grant stops the proxy's next request. It
// returns when either side closes.
func Proxy(ctx context.Context, c *grantwire.Client, o ProxyOptions) error {
	// The policy first: it names the command for a server that is not remote (mcp run
	// for a local one, mcp add for an unknown one).
	if _, err := gwmcp.Of(c).Token(ctx, o.Server, o.Agent, ""); err != nil && !needsAuthorization(err) {
		return fmt.Errorf("%w: %w", ErrGate, err)
	}
	url, err := serverURL(ctx, c, o.Server)
	if err != nil {
		return err
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = HTTPClient(c)
	}
	pv := &protocolVersion{}
	h := &Handler{Client: c, Server: o.Server, Agent: o.Agent, Timeout: o.Timeout}
	hc = withProtocolVersion(h.WithDPoP(hc), pv)
	params := &paramHeaders{}
	gate := &ToolGate{Client: c, Server: o.Server, Agent: o.Agent}
	remote, err := (&mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: hc, OAuthHandler: h,
		// The SDK opens the standalone stream only inside its own client session, which a
		// message-level proxy has not: the proxy opens it itself (standalone.go).
		DisableStandaloneSSE: true,
		// A call's SSE stream that the server closes is resumed as the SDK does it: a GET
		// with Last-Event-ID after the server's retry delay (its default of 5 attempts).
		MaxRetries: 0,
	}).Connect(ctx)
	if err != nil {
		return err
	}
	defer remote.Close()
	// A line from the client that is not JSON-RPC is answered with a parse error and the
	// session goes on (relay.go); the answer and the SDK's writes never split a line.
	out := &lockedWriter{w: o.Out}
	in := newFrameFilter(o.In, out, func(err error) {
		if o.OnError != nil {
			o.OnError(err)
		}
	})
	local, err := (&mcp.IOTransport{Reader: in, Writer: out}).Connect(ctx)
	if err != nil {
		return err
	}
	defer local.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg        sync.WaitGroup
		initMu    sync.Mutex
		initIDs   = map[jsonrpc.ID]bool{}
		listIDs   = map[jsonrpc.ID]bool{}
		errc      = make(chan error, 2)
		listening sync.Once
		// opened is closed when the standalone stream is open (or will not be).
		opened = make(chan struct{})
	)
	// listen opens the standalone SSE stream once the session is initialized (the
	// client's notifications/initialized reached the server), where what the server sends
	// outside a call arrives.
	listen := func() {
		if v := pv.get(); v == "" || v >= noStandaloneSince {
			close(opened)
			return
		}
		s := &standalone{url: url, hc: hc, h: h, sessionID: remote.SessionID(), deliver: local.Write, opened: opened,
			report: func(err error) {
				if o.OnError != nil && ctx.Err() == nil {
					o.OnError(err)
				}
			}}
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
	wg.Add(2)
	go func() { // client -> server
		defer wg.Done()
		defer cancel()
		for {
			msg, err := local.Read(ctx)
			if err != nil {
				errc <- ignoreEOF(err)
				return
			}
			wctx := ctx
			if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
				switch r.Method {
				case "initialize":
					initMu.Lock()
					initIDs[r.ID] = true
					initMu.Unlock()
				case "tools/list":
					initMu.Lock()
					listIDs[r.ID] = true
					initMu.Unlock()
				case "tools/call":
					// The agent's tool rule first (relay.go): a refused call never reaches the server.
					if jerr, refused := checkCall(ctx, gate, r.Params); jerr != nil {
						if werr := local.Write(ctx, &jsonrpc.Response{ID: r.ID, Error: jerr}); werr != nil {
							errc <- ignoreEOF(werr)
							return
						}
						var ge *grantwire.Error
						if errors.As(refused, &ge) && (errors.Is(refused, grantwire.ErrAgentNotGranted) || errors.Is(refused, grantwire.ErrAgentNotActive)) {
							errc <- fmt.Errorf("%w: %w", ErrGate, ge) // as a refused request ends the proxy
							return
						}
						continue
					}
					wctx = withParamHeaders(ctx, params.forCall(r.Params))
				}
			}
			if err := remote.Write(wctx, msg); err != nil {
				if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
					if we := serverError(err); we != nil {
						// The server answered the request with a JSON-RPC error (on an HTTP
						// error status, e.g. 400 with UnsupportedProtocolVersionError and the
						// versions it supports): that answer is the client's, as it was sent.
						if werr := local.Write(ctx, &jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}}); werr != nil {
							errc <- ignoreEOF(werr)
							return
						}
						continue
					}
				}
				var ge *grantwire.Error
				gate := errors.As(err, &ge) && (errors.Is(err, grantwire.ErrAgentNotGranted) || errors.Is(err, grantwire.ErrAgentNotActive))
				if o.OnError != nil && !gate && ctx.Err() == nil {
					o.OnError(err) // a gate refusal ends the proxy, which reports it
				}
				if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
					// The client waits for an answer: tell it why there is none.
					_ = local.Write(ctx, &jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{
						Code: jsonrpc.CodeInternalError, Message: "grantwire: " + safeMessage(err),
					}})
				}
				if gate {
					errc <- fmt.Errorf("%w: %w", ErrGate, ge)
					return
				}
				continue
			}
			if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "notifications/initialized" && !r.IsCall() {
				listening.Do(listen)
				select {
				case <-opened:
				case <-time.After(standaloneOpenWait):
				case <-ctx.Done():
				}
			}
		}
	}()
	go func() { // server -> client
		defer wg.Done()
		defer cancel()
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				errc <- ignoreEOF(err)
				return
			}
			if r, ok := msg.(*jsonrpc.Response); ok {
				initMu.Lock()
				isInit, isList := initIDs[r.ID], listIDs[r.ID]
				delete(initIDs, r.ID)
				delete(listIDs, r.ID)
				initMu.Unlock()
				if isList && r.Error == nil {
					params.learn(r.Result)
					// Only the tools the agent's tool rule lets it see (relay.go).
					if res, jerr := filterList(ctx, gate, r.Result); jerr != nil {
						r.Result, r.Error = nil, jerr
					} else {
						r.Result = res
					}
				}
				if isInit && r.Error == nil {
					var res struct {
						ProtocolVersion string `json:"protocolVersion"`
					}
					if json.Unmarshal(r.Result, &res) == nil {
						pv.set(res.ProtocolVersion)
					}
				}
			}
			if err := local.Write(ctx, msg); err != nil {
				errc <- ignoreEOF(err)
				return
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// serverError is the JSON-RPC error the server answered a request with on an HTTP error
// status, which the SDK's transport wraps in its error beside its own "rejected by
// transport" (also a JSON-RPC error, not the server's); nil when there is none.
func serverError(err error) *jsonrpc.Error {
	if err == nil {
		return nil
	}
	if we, ok := err.(*jsonrpc.Error); ok && !(we.Code == -32005 && we.Message == "rejected by transport") {
		return we
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if we := serverError(e); we != nil {
				return we
			}
		}
	case interface{ Unwrap() error }:
		return serverError(u.Unwrap())
	}
	return nil
}

// serverURL is the remote server's URL as the policy lists it.
func serverURL(ctx context.Context, c *grantwire.Client, id string) (string, error) {
	list, err := gwmcp.Of(c).RemoteServers(ctx, "")
	if err != nil {
		return "", err
	}
	for _, s := range list {
		if s.ID == id {
			return s.URL, nil
		}
	}
	return "", &grantwire.Error{Code: "UNKNOWN_CONNECTOR", Message: fmt.Sprintf("unknown remote MCP server %q; fix: grantwire mcp add %s --url <https URL of the MCP server>", id, id),
		Summary: fmt.Sprintf("unknown remote MCP server %q", id), Fix: "grantwire mcp add " + id + " --url <https URL of the MCP server>", Status: 404, Exit: 1}
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

// safeMessage is an error's text for the MCP client. Errors here come from the policy
// (which never puts a secret in a message) or from the transport; a bearer token is never
// part of either.
func safeMessage(err error) string {
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		return ge.Code + ": " + ge.Message
	}
	return err.Error()
}

// protocolVersion is the MCP protocol version the server chose in its initialize result.
type protocolVersion struct {
	mu sync.Mutex
	v  string
}

func (p *protocolVersion) set(v string) { p.mu.Lock(); p.v = v; p.mu.Unlock() }
func (p *protocolVersion) get() string  { p.mu.Lock(); defer p.mu.Unlock(); return p.v }

// withProtocolVersion sends the negotiated MCP-Protocol-Version on every request that has
// none (the SDK sets it itself only inside its own client session).
func withProtocolVersion(hc *http.Client, pv *protocolVersion) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		if v := pv.get(); v != "" && r.Header.Get("MCP-Protocol-Version") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("MCP-Protocol-Version", v)
		}
		return next.RoundTrip(setParamHeaders(r))
	})
	return &c
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
