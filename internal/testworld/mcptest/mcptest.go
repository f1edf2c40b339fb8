// Package mcptest runs a remote MCP server for grantwire's tests: an MCP server built with
// the MCP Go SDK (tools "echo", "whoami", "report" and "announce") served over streamable HTTP on 127.0.0.1
// behind the SDK's bearer-token middleware (auth.RequireBearerToken), with its protected
// resource metadata (RFC 9728) published at the path-aware well-known URL. Tokens are
// checked by a verifier the test gives (internal/testworld/authserver's Verify answers what an
// introspection endpoint would), including the resource they were issued for (RFC 8707).
//
// With Options.DPoP it requires DPoP-bound tokens and verifies each request's proof (RFC
// 9449; dpop.go).
//
// It imports the MCP Go SDK and the standard library only.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Token is what the verifier says about an access token.
type Token struct {
	Scopes   []string
	Expires  time.Time
	Resource string
	// JKT is the thumbprint of the DPoP key the token is bound to (cnf.jkt; Options.DPoP).
	JKT string
}

// Options configure a server.
type Options struct {
	// Issuer is the authorization server the metadata names.
	Issuer string
	// Verify checks an access token (an error: not valid).
	Verify func(token string) (Token, error)
	// Scopes are required of every request (and named in the challenge); ScopesSupported
	// is the metadata's scopes_supported (nil: not published).
	Scopes, ScopesSupported []string
	// ToolScopes are the scopes a tool call needs beyond Scopes: a call whose token lacks
	// one is answered 403 with an insufficient_scope challenge naming them (RFC 6750 §3.1;
	// the MCP scope step-up), before the tool runs.
	ToolScopes map[string][]string
	// Resource, when set, is the resource the metadata announces (and tokens must be
	// issued for) instead of URL: the same server under another name, such as
	// http://localhost:<port>/mcp.
	Resource func(url string) string
	// Open serves the MCP endpoint to anyone, without a bearer token or metadata: a
	// server that needs no authorization.
	Open bool
	// DPoP requires DPoP-bound tokens (RFC 9449; dpop.go), with DPoPNonce, when set, the
	// nonce every proof must carry.
	DPoP      bool
	DPoPNonce string
	// EventStore keeps every stream's events (the SDK's memory event store), so that a
	// client reconnecting with Last-Event-ID gets what it missed.
	EventStore bool
}

// Server is a running remote MCP server.
type Server struct {
	// URL is the MCP endpoint (http://127.0.0.1:<port>/mcp); MetadataURL its protected
	// resource metadata.
	URL, MetadataURL string
	srv              *http.Server
	calls            atomic.Int64
	refused          atomic.Int64
	stepUps          atomic.Int64
	streams          atomic.Int64
	mu               sync.Mutex
	drops            []context.CancelFunc
	dpop             *dpopGuard
}

// Start serves an MCP server on 127.0.0.1 until Close.
func Start(o Options) (*Server, error) {
	if o.Verify == nil || o.Issuer == "" {
		return nil, errors.New("mcptest: Options needs Issuer and Verify")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	base := "http://" + ln.Addr().String()
	s := &Server{URL: base + "/mcp", MetadataURL: base + "/.well-known/oauth-protected-resource/mcp", dpop: &dpopGuard{o: o}}

	server := mcp.NewServer(&mcp.Implementation{Name: "grantwire-mcptest", Version: "1.0.0"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echoes its text"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			s.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "the scopes of the caller's token"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.calls.Add(1)
			// The request's own token (the context may be the session's first request's).
			info := auth.TokenInfoFromContext(ctx)
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				info = req.Extra.TokenInfo
			}
			text := "anonymous"
			if info != nil {
				text = "scopes: " + strings.Join(info.Scopes, " ")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "report", Description: "reports its progress, asks the user, samples, and logs"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.calls.Add(1)
			return report(ctx, req)
		})
	mcp.AddTool(server, &mcp.Tool{Name: "announce", Description: "logs its text outside the call (the standalone stream)"},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			s.calls.Add(1)
			if err := req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "announce", Data: in.Text}); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "announced"}}}, nil, nil
		})
	var httpOpts *mcp.StreamableHTTPOptions
	if o.EventStore {
		httpOpts = &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}
	}
	resource := s.URL
	if o.Resource != nil {
		resource = o.Resource(s.URL)
	}
	verifier := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		t, err := o.Verify(token)
		if err != nil || t.Resource != resource {
			s.refused.Add(1)
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: t.Scopes, Expiration: t.Expires}, nil
	}
	mcpHandler := auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.MetadataURL, Scopes: o.Scopes,
	})(toolScopes(o.ToolScopes, s.MetadataURL, &s.stepUps, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, httpOpts)))

	prm := map[string]any{
		"resource": resource, "authorization_servers": []string{o.Issuer}, "bearer_methods_supported": []string{"header"},
	}
	if o.ScopesSupported != nil {
		prm["scopes_supported"] = o.ScopesSupported
	}
	mux := http.NewServeMux()
	if o.Open {
		mux.Handle("/mcp", s.countStreams(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, httpOpts)))
	} else if o.DPoP {
		mux.Handle("/mcp", s.countStreams(s.dpop.wrap(mcpHandler)))
	} else {
		mux.Handle("/mcp", s.countStreams(mcpHandler))
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if o.Open {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(prm)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Calls counts the tool calls served; Refused the tokens the verifier refused.
func (s *Server) Calls() int64   { return s.calls.Load() }
func (s *Server) Refused() int64 { return s.refused.Load() }

// Streams counts the standalone SSE streams (GET requests) open now.
func (s *Server) Streams() int64 { return s.streams.Load() }

// DropStreams ends every standalone SSE stream open now (as a proxy or a network between
// would), the session staying.
func (s *Server) DropStreams() {
	s.mu.Lock()
	drops := s.drops
	s.drops = nil
	s.mu.Unlock()
	for _, cancel := range drops {
		cancel()
	}
}

// countStreams counts the GET requests being served (the standalone SSE streams).
func (s *Server) countStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.streams.Add(1)
			defer s.streams.Add(-1)
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			s.mu.Lock()
			s.drops = append(s.drops, cancel)
			s.mu.Unlock()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// report is the tool "report": on the call's own SSE stream three progress notifications
// (for the call's progress token) and three log messages, an elicitation (a colour) and a
// sampling request; then three log messages with a context detached from the call, which
// the SDK sends on the standalone SSE stream (the GET). It answers what the user and the
// model said. Log messages need the client to have set a logging level.
func report(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, any, error) {
	ss := req.Session
	token := req.Params.GetProgressToken()
	for i := 1; i <= 3; i++ {
		if token != nil {
			if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d of 3", i)}); err != nil {
				return nil, nil, err
			}
		}
		if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "report", Data: fmt.Sprintf("log %d of 3", i)}); err != nil {
			return nil, nil, err
		}
	}
	el, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "Which colour?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}}, "required": []string{"colour"},
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("elicitation: %w", err)
	}
	sm, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 16,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say a word."}}}})
	if err != nil {
		return nil, nil, fmt.Errorf("sampling: %w", err)
	}
	word := ""
	if t, ok := sm.Content.(*mcp.TextContent); ok {
		word = t.Text
	}
	for i := 1; i <= 3; i++ {
		if err := ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "report", Data: fmt.Sprintf("standalone %d of 3", i)}); err != nil {
			return nil, nil, fmt.Errorf("standalone log: %w", err)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("%s: colour %v, word %s", el.Action, el.Content["colour"], word)}}}, nil, nil
}

// StepUps counts the 403 insufficient_scope answers (ToolScopes).
func (s *Server) StepUps() int64 { return s.stepUps.Load() }

// toolScopes answers a tools/call whose token lacks the tool's scopes 403
// insufficient_scope, naming the scopes, and serves anything else with next.
func toolScopes(need map[string][]string, metadataURL string, count *atomic.Int64, next http.Handler) http.Handler {
	if len(need) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				var held []string
				if info := auth.TokenInfoFromContext(r.Context()); info != nil {
					held = info.Scopes
				}
				for _, sc := range need[msg.Params.Name] {
					if !slices.Contains(held, sc) {
						count.Add(1)
						w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
							strings.Join(need[msg.Params.Name], " "), metadataURL))
						http.Error(w, "insufficient scope", http.StatusForbidden)
						return
					}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops the server.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// String names the server.
func (s *Server) String() string { return fmt.Sprintf("mcptest server at %s", s.URL) }
