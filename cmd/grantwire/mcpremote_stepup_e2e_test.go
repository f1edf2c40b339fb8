package main_test

// Step-up end to end (issue 14: "steps up on 403 insufficient_scope (bounded retries)"):
// an MCP server built with the go-sdk whose tool needs a scope the first authorization did
// not ask for answers 403 with an insufficient_scope challenge; `grantwire mcp proxy`
// authorizes again in the browser (the stand-in browser consents) with the union of the
// scopes held and challenged, and the go-sdk client's call then succeeds. A proxy that
// cannot open a browser refuses with the command that authorizes those scopes, which the
// test runs.

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/mcptest"
)

func TestE2ERemoteMCPStepUp(t *testing.T) {
	w := newE2E(t, authserver.Config{RequireRegistration: true})
	srv, err := mcptest.Start(mcptest.Options{
		Issuer: w.srv.URL(), ScopesSupported: []string{"notes:read", "notes:write"},
		ToolScopes: map[string][]string{"whoami": {"notes:write"}},
		Verify: func(token string) (mcptest.Token, error) {
			info, err := w.srv.Verify(token)
			return mcptest.Token{Scopes: info.Scopes, Expires: info.Expires, Resource: info.Resource}, err
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL, "--scopes", "notes:read").code)
	r := w.mcpAuthNoBrowser("notes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"notes:read"}, w.remoteList()["notes"].GrantedScopes)
	require.Equal(t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)

	// The proxy may open a browser (the stand-in one consents, as a person would).
	cmd := exec.Command(w.bin, "mcp", "proxy", "notes", "--agent", "builtin:chat")
	cmd.Env = append(append([]string(nil), w.env...), "BROWSER="+browserBinary(t))
	cmd.Dir = w.home
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-client", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr: %s", stderr)
	t.Cleanup(func() { _ = session.Close(); w.record(stderr.String()) })

	out, err := echo(t, ctx, session, "before the step-up")
	require.NoError(t, err)
	require.Equal(t, "before the step-up", out)
	exchanges := w.srv.Stats().CodeExchanges

	// whoami needs notes:write: 403 insufficient_scope, one step-up, then the call succeeds
	// with a token holding the union of the scopes.
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	require.NoError(t, err, "stderr: %s", stderr)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "scopes: notes:read notes:write", res.Content[0].(*mcp.TextContent).Text)
	require.Equal(t, int64(1), srv.StepUps(), "one 403 insufficient_scope")
	require.Equal(t, exchanges+1, w.srv.Stats().CodeExchanges, "one step-up authorization")
	require.Equal(t, []string{"notes:read", "notes:write"}, w.remoteList()["notes"].GrantedScopes)

	// The stepped-up token serves both tools with no further authorization.
	out, err = echo(t, ctx, session, "after the step-up")
	require.NoError(t, err)
	require.Equal(t, "after the step-up", out)
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Equal(t, int64(1), srv.StepUps())
	require.Equal(t, exchanges+1, w.srv.Stats().CodeExchanges)

	// Headless (no browser for the proxy): the step-up is refused with the command that
	// authorizes the union of the scopes, nothing is stored, and after that command the
	// call succeeds without a step-up.
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes2", "--url", srv.URL, "--scopes", "notes:read").code)
	r = w.mcpAuthNoBrowser("notes2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, w.gw("", "activations", "activate", "notes2", "builtin:chat", "--scopes", "use").code)
	headless, _ := w.proxySession(ctx, "notes2", "builtin:chat")
	exchanges = w.srv.Stats().CodeExchanges
	_, err = headless.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	require.Error(t, err)
	require.Contains(t, err.Error(), "INTERACTIVE_AUTH_REQUIRED")
	_, fix, ok := strings.Cut(err.Error(), "; fix: ")
	require.True(t, ok, err.Error())
	require.Equal(t, "grantwire mcp auth notes2 --scopes notes:read,notes:write --no-browser", fix)
	fixes.Record(t.Name(), "fix: "+fix) // a known kind (TestMain checks), run here
	require.Equal(t, exchanges, w.srv.Stats().CodeExchanges, "nothing was authorized")
	require.Equal(t, []string{"notes:read"}, w.remoteList()["notes2"].GrantedScopes)

	s := w.start(nil, strings.Fields(fix)[1:]...)
	consent(t, s.waitURL(t))
	r = s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"notes:read", "notes:write"}, w.remoteList()["notes2"].GrantedScopes)
	stepUps := srv.StepUps()
	headless2, _ := w.proxySession(ctx, "notes2", "builtin:chat")
	res, err = headless2.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "scopes: notes:read notes:write", res.Content[0].(*mcp.TextContent).Text)
	require.Equal(t, stepUps, srv.StepUps(), "no 403 after the fix")
}
