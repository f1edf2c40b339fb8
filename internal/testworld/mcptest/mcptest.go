// Package mcptest runs a remote MCP server for grantwire's tests: an MCP server built with
// the MCP Go SDK (tools "echo" and "whoami") served over streamable HTTP on 127.0.0.1
// behind the SDK's bearer-token middleware (auth.RequireBearerToken), with its protected
// resource metadata (RFC 9728) published at the path-aware well-known URL. Tokens are
// checked by a verifier the test gives (internal/testworld/authserver's Verify answers what an
// introspection endpoint would), including the resource they were issued for (RFC 8707).
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
	s := &Server{URL: base + "/mcp", MetadataURL: base + "/.well-known/oauth-protected-resource/mcp"}

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
	})(toolScopes(o.ToolScopes, s.MetadataURL, &s.stepUps, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))

	prm := map[string]any{
		"resource": resource, "authorization_servers": []string{o.Issuer}, "bearer_methods_supported": []string{"header"},
	}
	if o.ScopesSupported != nil {
		prm["scopes_supported"] = o.ScopesSupported
	}
	mux := http.NewServeMux()
	if o.Open {
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	} else {
		mux.Handle("/mcp", mcpHandler)
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
