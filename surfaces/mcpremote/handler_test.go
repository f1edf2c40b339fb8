package mcpremote

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/mcp"
)

// authorize hands h the server's answer status with its challenge, to a request that
// carried token.
func authorize(ctx context.Context, h *Handler, status int, challenge, token string) error {
	req := httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	if challenge != "" {
		rec.Header().Set("WWW-Authenticate", challenge)
	}
	rec.WriteHeader(status)
	return h.Authorize(ctx, req, rec.Result())
}

// What a 401 or 403 brings is the policy's (mcp_challenge): the handler keeps only the
// counts and asks. These refusals end before any token, authorization or network is needed.
func TestAuthorizeAsksThePolicy(t *testing.T) {
	ctx := context.Background()
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(memhost.New(time.Now(), 1).Capabilities("grantwire.test")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)

	// A session that authorized three times after 401s stops: authorizing again would loop.
	h := &Handler{Client: c, Server: "mcp-remote", Agent: "builtin:chat", reauthorizations: 3}
	err = authorize(ctx, h, http.StatusUnauthorized, `Bearer error="invalid_token"`, "a-token-of-another-session")
	if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, grantwire.ErrProviderError) {
		t.Fatalf("the fourth authorization: %v, want ErrUnauthorized wrapping PROVIDER_ERROR", err)
	}
	if h.reauthorizations != 3 {
		t.Fatalf("a refused authorization was counted: %d", h.reauthorizations)
	}

	// A 403 that asks for no scope: a step-up would not help.
	h = &Handler{Client: c, Server: "mcp-remote", Agent: "builtin:chat"}
	err = authorize(ctx, h, http.StatusForbidden, `Bearer error="invalid_token"`, "")
	if !errors.Is(err, grantwire.ErrProviderError) || errors.Is(err, ErrUnauthorized) || h.stepUps != 0 {
		t.Fatalf("a 403 without insufficient_scope: %v (step-ups %d)", err, h.stepUps)
	}

	// Any other status asks for no authorization.
	err = authorize(ctx, h, http.StatusInternalServerError, "", "")
	if !errors.Is(err, grantwire.ErrProviderError) {
		t.Fatalf("a 500: %v", err)
	}
}

// The session's words for what a refused request carried are the policy's.
func TestSentIsWhatTheRefusedRequestCarried(t *testing.T) {
	h := &Handler{}
	if got := h.sent(""); got != "none" {
		t.Fatalf("no token: %q", got)
	}
	if got := h.sent("x"); got != "other" {
		t.Fatalf("no current token: %q", got)
	}
	h.current = &mcp.Bearer{AccessToken: "tok", Digest: "sha256:1"}
	if got := h.sent("x"); got != "other" {
		t.Fatalf("another token: %q", got)
	}
	if got := h.sent("tok"); got != "current" {
		t.Fatalf("the current token: %q", got)
	}
	h.fresh = "sha256:1"
	if got := h.sent("tok"); got != "fresh" {
		t.Fatalf("the fresh token: %q", got)
	}
}
