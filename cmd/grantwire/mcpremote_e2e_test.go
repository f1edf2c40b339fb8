package main_test

// End to end for remote MCP servers (docs/behaviour.md#remote-mcp-servers), on the real
// parts: the built binary, the private Secret Service, files and locks under a temp home,
// internal/testworld/authserver as the authorization server (RFC 8414 metadata, dynamic client
// registration, RFC 9207 iss, RFC 7009 revocation) and an MCP server built with the MCP Go
// SDK behind the SDK's bearer-token middleware (internal/testworld/mcptest), publishing its
// protected resource metadata. A go-sdk MCP client talks to the server over stdio through
// `grantwire mcp proxy`.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/fixes"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/mcptest"
)

// remoteWorld is an e2e world with an MCP server whose authorization server is the
// world's local server.
func remoteWorld(t *testing.T, cfg authserver.Config, scopes []string) (*e2e, *mcptest.Server) {
	t.Helper()
	w := newE2E(t, cfg)
	return w, w.remoteServer(mcptest.Options{ScopesSupported: scopes})
}

// remoteServer starts an MCP server with opts whose authorization server is the world's
// local server (it verifies the tokens); it closes when the test ends.
func (w *e2e) remoteServer(opts mcptest.Options) *mcptest.Server {
	w.t.Helper()
	opts.Issuer = w.srv.URL()
	opts.Verify = func(token string) (mcptest.Token, error) {
		info, err := w.srv.Verify(token)
		return mcptest.Token{Scopes: info.Scopes, Expires: info.Expires, Resource: info.Resource}, err
	}
	srv, err := mcptest.Start(opts)
	require.NoError(w.t, err)
	w.t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// serveNotes adds the server at url as notes, authorizes it and activates builtin:chat on it.
func (w *e2e) serveNotes(url string) {
	w.t.Helper()
	require.Equal(w.t, 0, w.gw("", "mcp", "add", "notes", "--url", url).code)
	require.Equal(w.t, 0, w.mcpAuthNoBrowser("notes").code)
	require.Equal(w.t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)
}

// mcpAuthNoBrowser runs `mcp auth --no-browser` and consents through the printed URL.
func (w *e2e) mcpAuthNoBrowser(args ...string) bbResult {
	w.t.Helper()
	s := w.start(nil, append([]string{"mcp", "auth", "--no-browser", "--timeout", "60s"}, args...)...)
	consent(w.t, s.waitURL(w.t))
	r := s.wait(w.t)
	w.record(r.stdout, r.stderr)
	return r
}

// proxySession connects a go-sdk MCP client to `grantwire mcp proxy` over stdio.
func (w *e2e) proxySession(ctx context.Context, server, agent string) (*mcp.ClientSession, *strings.Builder) {
	w.t.Helper()
	return w.proxySessionWith(ctx, server, agent, nil)
}

// proxyTransport is `grantwire mcp proxy server --agent agent` in the world's environment
// and extraEnv, for a go-sdk client over stdio, with its standard error.
func (w *e2e) proxyTransport(server, agent string, extraEnv ...string) (*mcp.CommandTransport, *strings.Builder) {
	cmd := w.command(extraEnv, "mcp", "proxy", server, "--agent", agent)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	return &mcp.CommandTransport{Command: cmd}, stderr
}

// proxySessionWith is proxySession with the client's options (its handlers of the
// server's notifications and requests) and the proxy's extraEnv.
func (w *e2e) proxySessionWith(ctx context.Context, server, agent string, opts *mcp.ClientOptions, extraEnv ...string) (*mcp.ClientSession, *strings.Builder) {
	w.t.Helper()
	transport, stderr := w.proxyTransport(server, agent, extraEnv...)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-client", Version: "1"}, opts)
	session, err := client.Connect(ctx, transport, nil)
	require.NoError(w.t, err, "stderr: %s", stderr)
	w.t.Cleanup(func() { _ = session.Close(); w.record(stderr.String()) })
	return session, stderr
}

func echo(t *testing.T, ctx context.Context, s *mcp.ClientSession, text string) (string, error) {
	t.Helper()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		return "", err
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return "", &toolError{string(b)}
	}
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, nil
}

type toolError struct{ s string }

func (e *toolError) Error() string { return e.s }

type remoteRow struct {
	ID            string              `json:"id"`
	URL           string              `json:"url"`
	Authorized    bool                `json:"authorized"`
	Issuer        *string             `json:"issuer"`
	GrantedScopes []string            `json:"granted_scopes"`
	Registration  *string             `json:"registration"`
	Grants        map[string][]string `json:"grants"`
	ActiveFor     []string            `json:"active_for"`
}

func (w *e2e) remoteList() map[string]remoteRow {
	w.t.Helper()
	var out struct {
		Remote []remoteRow `json:"remote"`
	}
	w.gwJSON("", 0, &out, "mcp", "list")
	rows := map[string]remoteRow{}
	for _, r := range out.Remote {
		rows[r.ID] = r
	}
	return rows
}

// TestE2ERemoteMCP: mcp add, mcp auth (discovery from the server's 401, RFC 8414 metadata,
// dynamic registration, PKCE through the loopback, resource indicators), the proxy refusing
// an agent that is not granted with the command that fixes it, a go-sdk client calling a
// tool through the proxy with tokens refreshed (with the resource) under the lock, a
// revoked grant stopping the proxy, and logout revoking at the authorization server.
func TestE2ERemoteMCP(t *testing.T) {
	// Access tokens live 30 s: below the 60 s margin, so every token the proxy asks for
	// is a refresh.
	w, srv := remoteWorld(t, authserver.Config{RequireRegistration: true, ExpiresIn: 30}, []string{"notes:read", "notes:write"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r := w.gw("", "mcp", "add", "notes", "--url", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Next: grantwire mcp auth notes")
	require.Equal(t, 0, w.srv.Stats().MetadataRequests, "mcp add sends nothing")

	r = w.mcpAuthNoBrowser("notes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Authorized notes at "+w.srv.URL()+" with notes:read notes:write (dynamic client).")
	st := w.srv.Stats()
	require.Equal(t, 1, st.Registrations)
	require.Equal(t, 1, st.CodeExchanges)
	require.Equal(t, 1, w.srv.Clients())
	require.NotEmpty(t, w.keyring("notes:mcp_token"))
	require.NotEmpty(t, w.keyring("notes:mcp_client"))

	row := w.remoteList()["notes"]
	require.True(t, row.Authorized)
	require.Equal(t, w.srv.URL(), *row.Issuer)
	require.Equal(t, []string{"notes:read", "notes:write"}, row.GrantedScopes)
	require.Equal(t, "dynamic", *row.Registration)

	// Not granted: the proxy refuses before serving, with the command that fixes it.
	e := w.fail(4, "AGENT_NOT_GRANTED", "mcp", "proxy", "notes", "--agent", "builtin:chat")
	require.Equal(t, "grantwire activations activate notes builtin:chat --scopes use", e.Error.Fix)
	require.Equal(t, int64(0), srv.Calls())
	// The fix works.
	r = w.gw("", strings.Fields(e.Error.Fix)[1:]...)
	require.Equal(t, 0, r.code, r.stderr)

	session, _ := w.proxySession(ctx, "notes", "builtin:chat")
	tools, err := session.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 4)
	out, err := echo(t, ctx, session, "hello through grantwire")
	require.NoError(t, err)
	require.Equal(t, "hello through grantwire", out)
	require.Equal(t, int64(1), srv.Calls())
	// Every request refreshed (30 s tokens) and every refresh named the resource.
	st = w.srv.Stats()
	require.GreaterOrEqual(t, st.Refreshes, 2)
	for _, res := range st.RefreshResources {
		require.Equal(t, srv.URL, res, "RFC 8707: the resource on every refresh")
	}

	// A revoked grant stops the proxy's next request, and a new proxy refuses at once.
	r = w.gw("", "grants", "revoke", "notes", "builtin:chat")
	require.Equal(t, 0, r.code, r.stderr)
	_, err = echo(t, ctx, session, "again")
	require.Error(t, err)
	require.Contains(t, err.Error(), "AGENT_NOT_GRANTED")
	require.Equal(t, int64(1), srv.Calls(), "nothing reached the server after the revocation")
	w.fail(4, "AGENT_NOT_GRANTED", "mcp", "proxy", "notes", "--agent", "builtin:chat")

	// Granted but not active.
	require.Equal(t, 0, w.gw("", "grants", "grant", "notes", "builtin:chat", "--scopes", "use").code)
	e = w.fail(4, "AGENT_NOT_ACTIVE", "mcp", "proxy", "notes", "--agent", "builtin:chat")
	require.Equal(t, "grantwire activations activate notes builtin:chat", e.Error.Fix)

	// Logout revokes the refresh token at the authorization server and deletes the tokens.
	revocations := w.srv.Stats().Revocations
	var lo struct {
		HadTokens bool `json:"had_tokens"`
		Revoked   bool `json:"revoked"`
	}
	w.gwJSON("", 0, &lo, "mcp", "logout", "notes")
	require.True(t, lo.HadTokens)
	require.True(t, lo.Revoked)
	require.Eventually(t, func() bool { return w.srv.Stats().Revocations > revocations }, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, w.keyring("notes:mcp_token"))
	require.Empty(t, w.keyring("notes:mcp_client"))
	require.False(t, w.remoteList()["notes"].Authorized)
}

// TestE2ERemoteMCPHeadless: without a browser or a terminal, mcp auth says so before
// anything is sent or registered.
func TestE2ERemoteMCPHeadless(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, nil)
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL).code)
	e := w.fail(4, "INTERACTIVE_AUTH_REQUIRED", "mcp", "auth", "notes")
	require.Equal(t, "grantwire mcp auth notes --no-browser", e.Error.Fix)
	require.Contains(t, e.Error.Message, "nothing was sent or stored")
	st := w.srv.Stats()
	require.Zero(t, st.MetadataRequests+st.Registrations+st.TokenRequests, "nothing reached the authorization server")
	require.Zero(t, w.srv.Clients(), "no registration was made")
	require.Empty(t, w.keyring("notes:mcp_client"), "no registration was stored")
	require.Zero(t, srv.Refused(), "nothing reached the MCP server")
}

// TestE2ERemoteMCPPreregistered: a client registered by hand (its secret on stdin) is used
// with client_secret_basic where the authorization server takes no dynamic registration,
// and its secret never appears anywhere but the credential store: every command of the
// add/auth/proxy/logout session writes a decision log under the home (so the leak search
// of every e2e test reads it, with every output and file), where the events the policy
// emits are effects too.
func TestE2ERemoteMCPPreregistered(t *testing.T) {
	const clientID, secret = "grantwire-prereg", "prereg-secret-5f1b0c"
	w, srv := remoteWorld(t, authserver.Config{ClientID: clientID, ClientSecret: secret, NoRegistration: true}, nil)
	w.plant(secret)
	w.useDecisionLog()
	r := w.gw(secret+"\n", "mcp", "add", "corp", "--url", srv.URL, "--client-id", clientID, "--issuer", w.srv.URL(), "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	r = w.mcpAuthNoBrowser("corp")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "(preregistered client)")
	require.Zero(t, w.srv.Stats().Registrations)
	require.Equal(t, 0, w.gw("", "activations", "activate", "corp", "builtin:chat").code)
	session, _ := w.proxySession(context.Background(), "corp", "builtin:chat")
	out, err := echo(t, context.Background(), session, "prereg")
	require.NoError(t, err)
	require.Equal(t, "prereg", out)

	// The same client for another authorization server is refused, not sent there.
	r = w.gw(secret+"\n", "mcp", "add", "corp", "--url", srv.URL, "--client-id", clientID, "--issuer", "https://login.example.com", "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	exchanges := w.srv.Stats().TokenRequests
	e := w.fail(3, "CONFIGURATION", "mcp", "auth", "corp", "--no-browser")
	require.Contains(t, e.Error.Message, "is for the authorization server https://login.example.com")
	require.Equal(t, exchanges, w.srv.Stats().TokenRequests)

	// Logout revokes with the client's secret (Basic) and deletes the tokens.
	var lo struct {
		Revoked bool `json:"revoked"`
	}
	w.gwJSON("", 0, &lo, "mcp", "logout", "corp")
	require.True(t, lo.Revoked)
	require.Empty(t, w.keyring("corp:mcp_token"))

	// The decision log recorded the whole session (the leak search reads it at cleanup).
	w.requireDecisionsOf("mcp_add", "mcp_auth", "mcp_token", "mcp_logout")
}

// TestE2ERemoteMCPPasteBack: `mcp auth --no-browser` reads the redirect address pasted on
// standard input, exactly as `connect --no-browser` does (issue 20 §1.1): the browser that
// approves is elsewhere, so nothing reaches the loopback listener.
func TestE2ERemoteMCPPasteBack(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL).code)
	in, feed := io.Pipe()
	defer feed.Close()
	s := w.startIn(in, nil, "mcp", "auth", "notes", "--no-browser", "--timeout", "20s")
	back := redirectOf(t, s.waitURL(t)) // the browser stops at the redirect: it is pasted
	_, err := io.WriteString(feed, back.String()+"\n")
	require.NoError(t, err)
	require.NoError(t, feed.Close())
	r := s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Authorized notes at "+w.srv.URL())
	require.Contains(t, r.stderr, "paste it here and press Enter")
	require.Equal(t, 1, w.srv.Stats().CodeExchanges)
	require.True(t, w.remoteList()["notes"].Authorized)
}

// TestE2ERemoteMCPStatus: `status` lists the remote MCP servers a person added, and
// `status <name>` says whether one is authorized, at which issuer, with which scopes
// (issue 20 §1.3).
func TestE2ERemoteMCPStatus(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL).code)
	r := w.gw("", "status", "notes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^notes\s+mcp_remote\s+not authorized\s+`+srv.URL+`\s`, r.stdout)

	require.Equal(t, 0, w.mcpAuthNoBrowser("notes").code)
	r = w.gw("", "status", "notes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^notes\s+mcp_remote\s+authorized\s+`+w.srv.URL()+`, 1 scope\(s\)`, r.stdout)
	r = w.gw("", "status")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^notes\s+mcp_remote\s+authorized\s`, r.stdout, "the whole list names it too")
	var doc struct {
		Connectors []struct {
			ID         string   `json:"id"`
			Configured bool     `json:"configured"`
			Issuer     string   `json:"issuer"`
			URL        string   `json:"url"`
			Scopes     []string `json:"scopes"`
		} `json:"connectors"`
	}
	w.gwJSON("", 0, &doc, "status", "notes")
	require.Len(t, doc.Connectors, 1)
	require.True(t, doc.Connectors[0].Configured)
	require.Equal(t, w.srv.URL(), doc.Connectors[0].Issuer)
	require.Equal(t, srv.URL, doc.Connectors[0].URL)
	require.Equal(t, []string{"notes:read"}, doc.Connectors[0].Scopes)
}

// TestE2ERemoteMCPRemove: `mcp remove` revokes at the authorization server, deletes the
// tokens, the registration and the entry, and wipes the server's grants and activations
// (issue 20 §1.5); a catalog server is refused with mcp logout, run as printed.
func TestE2ERemoteMCPRemove(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL).code)
	require.Equal(t, 0, w.mcpAuthNoBrowser("notes").code)
	require.Equal(t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)
	require.NotEmpty(t, w.keyring("notes:mcp_token"))
	revocations := w.srv.Stats().Revocations

	r := w.gw("", "mcp", "remove", "notes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Removed the remote MCP server notes: its refresh token was revoked at the authorization server")
	require.Contains(t, r.stdout, "grants removed: builtin:chat; deactivated for: builtin:chat.")
	require.Eventually(t, func() bool { return w.srv.Stats().Revocations > revocations }, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, w.keyring("notes:mcp_token"))
	require.Empty(t, w.keyring("notes:mcp_client"))
	_, listed := w.remoteList()["notes"]
	require.False(t, listed, "the entry is gone")
	for _, f := range []string{"connectors/grants.json", "connectors/activations.json", "mcp_remote.json"} {
		if doc, ok := w.homeFile(f); ok {
			require.NotContains(t, doc, `"notes"`, f)
		}
	}
	w.fail(1, "UNKNOWN_CONNECTOR", "mcp", "remove", "notes")
}

// TestE2ERemoteMCPNeedsNoAuthorization: mcp auth on a server that answers without a token
// says that it needs no authorization, and asks no authorization server anything (issue
// 20 §1.7).
func TestE2ERemoteMCPNeedsNoAuthorization(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	srv, err := mcptest.Start(mcptest.Options{Issuer: w.srv.URL(), Open: true,
		Verify: func(string) (mcptest.Token, error) { return mcptest.Token{}, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	require.Equal(t, 0, w.gw("", "mcp", "add", "open", "--url", srv.URL).code)
	e := w.fail(3, "CONFIGURATION", "mcp", "auth", "open", "--no-browser")
	require.Contains(t, e.Error.Message, "the open server needs no authorization")
	require.NotContains(t, e.Error.Message, "404")
	st := w.srv.Stats()
	require.Zero(t, st.MetadataRequests+st.Registrations)
}

// TestE2ERemoteMCPProxyReportsForwardingErrors: an error after the gate (here the server
// gone) reaches stderr as refusals do, not only the JSON-RPC error
// (issue 20 §1.8).
func TestE2ERemoteMCPProxyReportsForwardingErrors(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	w.serveNotes(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, stderr := w.proxySession(ctx, "notes", "builtin:chat")
	_, err := echo(t, ctx, session, "before")
	require.NoError(t, err)
	require.Empty(t, stderr.String())
	require.NoError(t, srv.Close())
	_, err = echo(t, ctx, session, "after")
	require.Error(t, err)
	_ = session.Close() // waits for the proxy, and for its stderr
	require.Contains(t, stderr.String(), "grantwire: forwarding to the server failed")
	// The server's close reaches the proxy as a refused connection, or as EOF on a kept-alive one.
	require.Regexp(t, `connection refused|EOF`, stderr.String())
}

// TestE2ERemoteMCPTimeoutSaysItsDuration: `mcp auth --timeout 2s` says 2s, not 0m (issue
// 20 §1.11).
func TestE2ERemoteMCPTimeoutSaysItsDuration(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL).code)
	r := w.gw("", "mcp", "auth", "notes", "--no-browser", "--timeout", "2s")
	require.Equal(t, 4, r.code, r.stderr)
	require.Contains(t, r.stderr, "grantwire: no answer from the browser in 2s; nothing was stored")
}

// TestE2ERemoteMCPLoopbackRuleSaidOneWay: mcp add's refusal and its --help say the same
// loopback rule, localhost included, and localhost is accepted (issue 20 §1.9).
func TestE2ERemoteMCPLoopbackRuleSaidOneWay(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	const rule = "(127.0.0.1, ::1 or localhost)"
	e := w.fail(3, "CONFIGURATION", "mcp", "add", "plain", "--url", "http://mcp.example.com/mcp")
	require.Contains(t, e.Error.Message, "plain HTTP is allowed only to a loopback address "+rule)
	help := w.gw("", "mcp", "add", "--help")
	require.Equal(t, 0, help.code)
	require.Contains(t, strings.Join(strings.Fields(help.stdout), " "), "plain http only to a loopback address "+rule)
	require.Equal(t, 0, w.gw("", "mcp", "add", "local", "--url", "http://localhost:3000/mcp").code)
}

// nextHint returns the commands of the "Next:" line of out, <agent> filled in.
func nextHint(t *testing.T, out, agent string) [][]string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "Next: "); ok {
			var cmds [][]string
			for _, c := range strings.Split(rest, ", then ") {
				words := strings.Fields(strings.ReplaceAll(c, "<agent>", agent))
				require.Equal(t, "grantwire", words[0], line)
				cmds = append(cmds, words[1:])
			}
			return cmds
		}
	}
	t.Fatalf("no Next: line in %q", out)
	return nil
}

// TestE2ENextHintsRun: every "Next:" hint of mcp add, mcp auth and configure, run as
// printed (the agent filled in), works (issue 20 §1.10).
func TestE2ENextHintsRun(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	r := w.gw("", "mcp", "add", "notes", "--url", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	hint := nextHint(t, r.stdout, "builtin:chat")
	require.Equal(t, [][]string{{"mcp", "auth", "notes"}}, hint)
	// The stand-in browser consents.
	s := w.start([]string{"BROWSER=" + browserBinary(t)}, append(hint[0], "--timeout", "60s")...)
	r = s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)

	hint = nextHint(t, r.stdout, "builtin:chat")
	require.Len(t, hint, 2)
	r = w.gw("", hint[0]...)
	require.Equal(t, 0, r.code, "%v: %s", hint[0], r.stderr)
	require.Equal(t, []string{"mcp", "proxy", "notes", "--agent", "builtin:chat"}, hint[1])
	session, _ := w.proxySession(context.Background(), "notes", "builtin:chat")
	out, err := echo(t, context.Background(), session, "next")
	require.NoError(t, err)
	require.Equal(t, "next", out)

	// configure of a local server without keys.
	r = w.gw("", "configure", "mcp-fetch")
	require.Equal(t, 0, r.code, r.stderr)
	hint = nextHint(t, r.stdout, "builtin:coder")
	r = w.gw("", hint[0]...)
	require.Equal(t, 0, r.code, "%v: %s", hint[0], r.stderr)
	r = w.gw("", "mcp", "config", "mcp-fetch", "--agent", "builtin:coder")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "granted and active: no warning")
}

// TestRemoteMCPAuthHelpSaysPasteBack: mcp auth --help says --no-browser reads the pasted
// redirect, not "open it anywhere on this machine" (issue 20 §1.12).
func TestRemoteMCPAuthHelpSaysPasteBack(t *testing.T) {
	w := newBB(t)
	r := w.run("", "mcp", "auth", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "on this machine")
	require.Contains(t, strings.Join(strings.Fields(r.stdout), " "), "pasted on standard input")
}

// TestE2ERemoteMCPUnreachableHostSaysWhy: a host name that does not resolve is named as
// the reason, not "(failed)" (issue 20 §2.4).
func TestE2ERemoteMCPUnreachableHostSaysWhy(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	require.Equal(t, 0, w.gw("", "mcp", "add", "gone", "--url", "https://mcp.grantwire-test.invalid/mcp").code)
	e := w.fail(5, "PROVIDER_ERROR", "mcp", "auth", "gone", "--no-browser")
	require.Contains(t, e.Error.Message, "could not be reached (its host name does not resolve)")
}

// TestE2ERemoteMCPToolRule: mcp proxy with a tool rule, the go-sdk client on stdio and the
// go-sdk server behind it (docs/behaviour.md#tools): the list holds only the tools of the
// rule, a call of another is refused with a JSON-RPC error naming the command that allows
// it and never reaches the server, and after that command it goes through.
func TestE2ERemoteMCPToolRule(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{RequireRegistration: true}, []string{"notes:read"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w.serveNotes(srv.URL)
	r := w.gw("", "activations", "activate", "notes", "builtin:chat", "--tools", "whoami")
	require.Equal(t, 0, r.code, r.stderr)

	session, _ := w.proxySession(ctx, "notes", "builtin:chat")
	tools, err := session.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	require.Equal(t, "whoami", tools.Tools[0].Name)
	_, err = echo(t, ctx, session, "refused")
	require.Error(t, err)
	fix := "grantwire activations activate notes builtin:chat --tools echo,whoami"
	require.Contains(t, err.Error(), "TOOL_NOT_ALLOWED")
	require.Contains(t, err.Error(), fix)
	require.Equal(t, int64(0), srv.Calls(), "the refused call never reached the server")

	// The session goes on: the fix, run as printed, allows the call at once.
	w.fixes("", fix)
	out, err := echo(t, ctx, session, "allowed now")
	require.NoError(t, err)
	require.Equal(t, "allowed now", out)
	tools, err = session.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 2)

	// All tools again.
	w.fixes("", "grantwire activations activate notes builtin:chat --all-tools")
	tools, err = session.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 4)
}

// A line that is not JSON-RPC from the MCP client, through mcp proxy: answered with a
// parse error (id null), reported on stderr, and the session goes on (the next request is
// answered by the server).
func TestE2ERemoteMCPProxyAnswersAMalformedLine(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{RequireRegistration: true}, []string{"notes:read"})
	w.serveNotes(srv.URL)
	transport, stderr := w.proxyTransport("notes", "builtin:chat")
	cmd := transport.Command
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); w.record(stderr.String()) }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() map[string]any {
		t.Helper()
		require.True(t, lines.Scan(), "stderr: %s", stderr)
		var m map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m), lines.Text())
		return m
	}
	_, err = io.WriteString(stdin, "this is not json\n")
	require.NoError(t, err)
	m := next()
	require.Nil(t, m["id"])
	require.Equal(t, float64(-32700), m["error"].(map[string]any)["code"])
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	require.NoError(t, err)
	m = next()
	require.Equal(t, float64(1), m["id"])
	require.NotNil(t, m["result"], "the server answered: the session went on")
	require.Contains(t, stderr.String(), "not a JSON-RPC message")
}

// serverMessages records what a go-sdk client was told by the server.
type serverMessages struct {
	mu                      sync.Mutex
	progress, logs, prompts []string
}

func (m *serverMessages) add(to *[]string, s string) {
	m.mu.Lock()
	*to = append(*to, s)
	m.mu.Unlock()
}
func (m *serverMessages) snapshot() (progress, logs, prompts []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.progress...), append([]string(nil), m.logs...), append([]string(nil), m.prompts...)
}

// clientOptions answer the server's elicitation ("teal") and sampling ("hello") requests
// and record its progress and log notifications.
func (m *serverMessages) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			m.add(&m.progress, r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			m.add(&m.logs, fmt.Sprint(r.Params.Data))
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			m.add(&m.prompts, "elicit: "+r.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "teal"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			m.add(&m.prompts, "sample")
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e", Content: &mcp.TextContent{Text: "hello"}}, nil
		},
	}
}

// TestE2ERemoteMCPProxyForwardsServerMessages: every server→client message reaches a
// go-sdk client on the proxy's stdio side, from a go-sdk MCP server over streamable HTTP
// (issue 20 §1.2): on the call's own SSE stream three progress notifications, three log
// messages, an elicitation and a sampling request (answered by the client, the answers
// carried back to the server), and on the standalone SSE stream (the GET the proxy opens
// after initialization; the SDK routes there what the server sends outside any call) three
// more log messages.
func TestE2ERemoteMCPProxyForwardsServerMessages(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{}, []string{"notes:read"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, stderr, got := w.messagesSession(t, ctx, srv)

	params := &mcp.CallToolParams{Name: "report"}
	params.SetProgressToken("p1")
	res, err := session.CallTool(ctx, params)
	require.NoError(t, err, "stderr: %s", stderr)
	require.False(t, res.IsError, "%+v", res.Content)
	require.Equal(t, "accept: colour teal, word hello", res.Content[0].(*mcp.TextContent).Text,
		"the client's answers reached the server")
	want := []string{"log 1 of 3", "log 2 of 3", "log 3 of 3", "standalone 1 of 3", "standalone 2 of 3", "standalone 3 of 3"}
	require.Eventually(t, func() bool { _, logs, _ := got.snapshot(); return len(logs) == len(want) }, 10*time.Second, 10*time.Millisecond)
	progress, logs, prompts := got.snapshot()
	require.Equal(t, []string{"step 1 of 3", "step 2 of 3", "step 3 of 3"}, progress)
	require.Equal(t, want, logs)
	require.Equal(t, []string{"elicit: Which colour?", "sample"}, prompts)
	require.Empty(t, stderr.String())
	// The proxy still serves after all of it.
	out, err := echo(t, ctx, session, "after the report")
	require.NoError(t, err)
	require.Equal(t, "after the report", out)
}

// TestE2ERemoteMCPProxyResumesTheStandaloneStream: when the server ends the standalone
// stream, the proxy opens it again with Last-Event-ID, and a server that keeps an event
// store (the go-sdk's) replays what it sent meanwhile: the client misses nothing and gets
// nothing twice.
func TestE2ERemoteMCPProxyResumesTheStandaloneStream(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	srv := w.remoteServer(mcptest.Options{ScopesSupported: []string{"notes:read"}, EventStore: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, stderr, got := w.messagesSession(t, ctx, srv)
	open := func() bool { return srv.Streams() == 1 }
	announce := func(text string) {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "announce", Arguments: map[string]any{"text": text}})
		require.NoError(t, err, "stderr: %s", stderr)
		require.False(t, res.IsError, "%+v", res.Content)
	}
	logs := func() []string { _, l, _ := got.snapshot(); return l }
	announce("before the drop")
	require.Eventually(t, func() bool { return len(logs()) == 1 }, 10*time.Second, 10*time.Millisecond)

	srv.DropStreams()
	require.Eventually(t, func() bool { return srv.Streams() == 0 }, 10*time.Second, 10*time.Millisecond)
	announce("while the stream was down")
	require.Eventually(t, open, 10*time.Second, 10*time.Millisecond, "the proxy reconnects")
	require.Eventually(t, func() bool { return len(logs()) >= 2 }, 10*time.Second, 10*time.Millisecond)
	announce("after the reconnection")
	require.Eventually(t, func() bool { return len(logs()) >= 3 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a duplicate would arrive now
	require.Equal(t, []string{"before the drop", "while the stream was down", "after the reconnection"}, logs())
	require.Empty(t, stderr.String())
}

// messagesSession serves srv as the remote MCP server notes and opens a proxy session of
// builtin:chat on it that records the server's messages and asks for its info logs; it
// returns once the proxy holds the standalone SSE stream.
func (w *e2e) messagesSession(t *testing.T, ctx context.Context, srv *mcptest.Server) (*mcp.ClientSession, *strings.Builder, *serverMessages) {
	t.Helper()
	w.serveNotes(srv.URL)
	got := &serverMessages{}
	session, stderr := w.proxySessionWith(ctx, "notes", "builtin:chat", got.clientOptions())
	require.NoError(t, session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	require.Eventually(t, func() bool { return srv.Streams() == 1 }, 10*time.Second, 10*time.Millisecond,
		"the proxy opens the standalone SSE stream (stderr: %s)", stderr)
	return session, stderr, got
}

// Racing instances (issue 21 §3): several `grantwire mcp proxy` processes of one remote
// server started at once, on the real parts (the built binary, the private Secret Service,
// file locks under the temp home, internal/testworld/authserver counting what reaches it,
// a go-sdk MCP server and go-sdk clients on stdio).

// startProxies starts n proxies of server for agent at once (the stand-in browser
// consents for any that authorizes) and connects a go-sdk client to each; every one must
// initialize.
func (w *e2e) startProxies(ctx context.Context, n int, server, agent string) []*mcp.ClientSession {
	w.t.Helper()
	sessions := make([]*mcp.ClientSession, n)
	errs := make([]error, n)
	stderrs := make([]*strings.Builder, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		var transport *mcp.CommandTransport
		transport, stderrs[i] = w.proxyTransport(server, agent, "BROWSER="+browserBinary(w.t))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			sessions[i], errs[i] = mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("racer-%d", i), Version: "1"}, nil).
				Connect(ctx, transport, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(w.t, errs[i], "proxy %d: stderr: %s", i, stderrs[i])
		s, stderr := sessions[i], stderrs[i]
		w.t.Cleanup(func() { _ = s.Close(); w.record(stderr.String()) })
	}
	return sessions
}

// echoEach calls echo through every session: each serves.
func echoEach(t *testing.T, ctx context.Context, sessions []*mcp.ClientSession) {
	t.Helper()
	for i, s := range sessions {
		out, err := echo(t, ctx, s, fmt.Sprintf("racer %d", i))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("racer %d", i), out)
	}
}

// TestE2ERemoteMCPRacingAuthorization: 3 proxies of one server nobody has authorized,
// started together, make exactly one client registration and one authorization (one
// code issued, one exchanged) at the authorization server, and all three serve.
func TestE2ERemoteMCPRacingAuthorization(t *testing.T) {
	w, srv := remoteWorld(t, authserver.Config{RequireRegistration: true}, []string{"notes:read"})
	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL).code)
	require.Equal(t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	echoEach(t, ctx, w.startProxies(ctx, 3, "notes", "builtin:chat"))
	st := w.srv.Stats()
	require.Equal(t, 1, st.Registrations, "one client registration")
	require.Equal(t, 1, w.srv.Clients())
	require.Equal(t, 1, st.Authorizations, "one authorization (one code issued)")
	require.Equal(t, 1, st.CodeExchanges)
	require.Equal(t, 0, st.ReuseDetected+st.InvalidGrants)
	require.Equal(t, int64(3), srv.Calls())
}

// TestE2ERemoteMCPRacingRefresh: 10 proxies started together with a stored token about to
// expire make one refresh at the authorization server (the first refreshes under the
// server's lock, the others find its fresh token), and all ten serve.
func TestE2ERemoteMCPRacingRefresh(t *testing.T) {
	// 30 s tokens are within the 60 s margin: the stored one must be refreshed.
	w, srv := remoteWorld(t, authserver.Config{RequireRegistration: true, ExpiresIn: 30}, []string{"notes:read"})
	w.serveNotes(srv.URL)
	// The refreshed token lives an hour: only the stored one is expiring.
	w.srv.Configure(func(c *authserver.Config) { c.ExpiresIn = 3600 })
	before := w.srv.Stats()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	echoEach(t, ctx, w.startProxies(ctx, 10, "notes", "builtin:chat"))
	st := w.srv.Stats()
	require.Equal(t, 1, st.RefreshRequests-before.RefreshRequests, "one refresh at the server")
	require.Equal(t, 1, st.Refreshes-before.Refreshes)
	require.Equal(t, 0, st.ReuseDetected+st.InvalidGrants)
	require.Equal(t, before.Authorizations, st.Authorizations, "no authorization")
	require.Equal(t, int64(10), srv.Calls())
}

// Step-up end to end (issue 14: "steps up on 403 insufficient_scope (bounded retries)"):
// an MCP server built with the go-sdk whose tool needs a scope the first authorization did
// not ask for answers 403 with an insufficient_scope challenge; `grantwire mcp proxy`
// authorizes again in the browser (the stand-in browser consents) with the union of the
// scopes held and challenged, and the go-sdk client's call then succeeds. A proxy that
// cannot open a browser refuses with the command that authorizes those scopes, which the
// test runs.

func TestE2ERemoteMCPStepUp(t *testing.T) {
	w := newE2E(t, authserver.Config{RequireRegistration: true})
	srv := w.remoteServer(mcptest.Options{
		ScopesSupported: []string{"notes:read", "notes:write"},
		ToolScopes:      map[string][]string{"whoami": {"notes:write"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	require.Equal(t, 0, w.gw("", "mcp", "add", "notes", "--url", srv.URL, "--scopes", "notes:read").code)
	r := w.mcpAuthNoBrowser("notes")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, []string{"notes:read"}, w.remoteList()["notes"].GrantedScopes)
	require.Equal(t, 0, w.gw("", "activations", "activate", "notes", "builtin:chat", "--scopes", "use").code)

	// The proxy may open a browser (the stand-in one consents, as a person would).
	session, stderr := w.proxySessionWith(ctx, "notes", "builtin:chat", nil, "BROWSER="+browserBinary(t))

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
