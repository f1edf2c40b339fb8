// Package mcpremote connects MCP clients to remote MCP servers behind OAuth 2.1 through
// grantwire: an [auth.OAuthHandler] for the MCP Go SDK's streamable-HTTP client transport
// whose tokens come from grantwire's policy (the agent gate, the stored token or a refresh
// under the server's lock, an authorization on 401, a bounded step-up on 403
// insufficient_scope), and the stdio proxy `grantwire mcp proxy` runs. It makes no OAuth
// decision itself: discovery, registration, scopes, issuer binding and every URL are the
// policy's (docs/behaviour.md#remote-mcp-servers). It never prints or logs a token.
//
// It imports the module root (package grantwire) and the MCP Go SDK.
package mcpremote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/mcp"
)

// Handler is the OAuth side of one agent's connection to one remote MCP server. It is safe
// for concurrent use; one Handler serves one session.
type Handler struct {
	// Client runs the policy's operations.
	Client *grantwire.Client
	// Server is the remote MCP server's id; Agent the agent the connection is for.
	Server, Agent string
	// Timeout bounds the wait for the browser during an authorization (default 5 minutes).
	Timeout time.Duration

	mu sync.Mutex
	// current is the token last handed to the transport (to know which one a 401 refused).
	current *mcp.Bearer
	// authorizing: an authorization after a 401 happened and its first token (fresh) has
	// not yet been handed out; fresh is that token's digest and freshUses how many
	// requests carried it.
	authorizing bool
	fresh       string
	freshUses   int
	// reauthorizations counts authorizations after a 401 in this session, stepUps its
	// step-up authorizations (the policy bounds both: mcp_challenge, mcp_auth).
	reauthorizations int
	stepUps          int
}

var _ auth.OAuthHandler = (*Handler)(nil)

// TokenSource implements auth.OAuthHandler: every request asks the policy for the bearer
// token (the gate runs each time, so a revoked grant stops the next request).
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenSource{ctx: ctx, h: h}, nil
}

type tokenSource struct {
	ctx context.Context
	h   *Handler
}

// Token returns the agent's bearer token. When the server is not authorized yet (or must
// be again) it answers an invalid_grant error, on which the SDK's transport sends the
// request without a token: the server's 401 then brings Authorize. Any other refusal (the
// agent is not granted or not active) fails the request before it is sent.
func (t tokenSource) Token() (*oauth2.Token, error) {
	b, err := mcp.Of(t.h.Client).Token(t.ctx, t.h.Server, t.h.Agent, "")
	if err != nil {
		if needsAuthorization(err) {
			return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "no usable authorization stored"}
		}
		return nil, err
	}
	t.h.mu.Lock()
	t.h.current = b
	if t.h.authorizing {
		t.h.authorizing, t.h.fresh, t.h.freshUses = false, b.Digest, 0
	}
	if b.Digest == t.h.fresh {
		t.h.freshUses++
	}
	t.h.mu.Unlock()
	return &oauth2.Token{AccessToken: b.AccessToken, TokenType: "Bearer", Expiry: b.ExpiresAt}, nil
}

// needsAuthorization: the policy says the server holds no usable tokens.
func needsAuthorization(err error) bool {
	return errors.Is(err, grantwire.ErrNotConnected) || errors.Is(err, grantwire.ErrReauthRequired) ||
		errors.Is(err, grantwire.ErrConnectionRevoked)
}

// ErrUnauthorized wraps the policy's refusal to authorize again after a 401 (a fresh token
// refused on its first request, or the session's authorizations bounded).
var ErrUnauthorized = errors.New("mcpremote: the server refused the request after a fresh authorization")

// Authorize implements auth.OAuthHandler: what to do about the server's 401 or 403 is the
// policy's (op mcp_challenge) from what the session knows: what the refused request carried,
// whether a refresh was tried, how many authorizations and step-ups it made. The policy
// answers a refresh (the refused token was the current one: Token with its digest), an
// authorization with the server's challenge, a step-up (403 insufficient_scope, bounded by
// mcp_auth), or an error: a fresh token refused on its first request or too many
// authorizations after 401s (wrapped in ErrUnauthorized), a 403 asking for no scope. The
// transport retries once after nil.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if resp != nil && resp.Body != nil {
		defer resp.Body.Close()
	}
	challenge := strings.Join(resp.Header.Values("WWW-Authenticate"), ", ")
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	h.mu.Lock()
	defer h.mu.Unlock()
	r := mcp.Refusal{Status: resp.StatusCode, WWWAuthenticate: challenge, Sent: h.sent(sent),
		Uses: h.freshUses, Authorizations: h.reauthorizations, StepUps: h.stepUps}
	// Two questions at most: a refresh that gives no new token is answered once more.
	for range 2 {
		a, err := mcp.Of(h.Client).Challenge(ctx, h.Server, r)
		if err != nil {
			if resp.StatusCode == http.StatusUnauthorized && errors.Is(err, grantwire.ErrProviderError) {
				return fmt.Errorf("%w: %w", ErrUnauthorized, err)
			}
			return err
		}
		switch a.Action {
		case "refresh":
			b, err := mcp.Of(h.Client).Token(ctx, h.Server, h.Agent, h.current.Digest)
			switch {
			case err == nil && b.Digest != h.current.Digest:
				h.current = b
				return nil
			case err != nil && !needsAuthorization(err):
				return err
			}
			r.Refreshed = true
		case "authorize":
			h.reauthorizations++
			_, err := mcp.Of(h.Client).Authorize(ctx, h.Server, mcp.AuthOptions{
				WWWAuthenticate: challenge, Status: http.StatusUnauthorized, Rejected: h.rejected(sent), Timeout: h.Timeout,
			})
			if err == nil {
				h.authorizing = true
			}
			return err
		case "step_up":
			h.stepUps = a.StepUp
			_, err := mcp.Of(h.Client).Authorize(ctx, h.Server, mcp.AuthOptions{
				WWWAuthenticate: challenge, Status: http.StatusForbidden, StepUp: a.StepUp, Rejected: h.rejected(sent), Timeout: h.Timeout,
			})
			return err
		default:
			return fmt.Errorf("mcpremote: the policy answered %q to a %d", a.Action, resp.StatusCode)
		}
	}
	return fmt.Errorf("mcpremote: the policy asked for a refresh twice for one %d", resp.StatusCode)
}

// sent is what the refused request carried, in the policy's words (mcp_challenge's sent):
// "none", "other", "current" (the token last handed out) or "fresh" (that token, first
// handed out after this session's last authorization). Called with h.mu held.
func (h *Handler) sent(token string) string {
	switch {
	case token == "":
		return "none"
	case h.current == nil || token != h.current.AccessToken:
		return "other"
	case h.current.Digest == h.fresh:
		return "fresh"
	}
	return "current"
}

// rejected is the digest of the refused token sent ("" when the request carried none, or
// one this session did not get from the policy). Called with h.mu held.
func (h *Handler) rejected(sent string) string {
	if sent != "" && h.current != nil && sent == h.current.AccessToken {
		return h.current.Digest
	}
	return ""
}

// HTTPClient is the HTTP client of an MCP connection: redirects are never followed (the
// policy checked the server's URL, not where it might send the request) and the names the
// policy counts as loopback (its manifest's rule, core.Loopback) are dialed at their
// loopback address, never looked up: localhost as 127.0.0.1.
func HTTPClient(c *grantwire.Client) *http.Client {
	loopback := c.Engine().Manifest().Loopback
	t := http.DefaultTransport.(*http.Transport).Clone()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dial(ctx, network, loopback.Addr(addr))
	}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
