package main_test

// Racing instances (issue 21 §3): several `grantwire mcp proxy` processes of one remote
// server started at once, on the real parts (the built binary, the private Secret Service,
// file locks under the temp home, internal/testworld/authserver counting what reaches it,
// a go-sdk MCP server and go-sdk clients on stdio).

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

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
		cmd := exec.Command(w.bin, "mcp", "proxy", server, "--agent", agent)
		cmd.Env = append(append([]string(nil), w.env...), "BROWSER="+browserBinary(w.t))
		cmd.Dir = w.home
		stderrs[i] = &strings.Builder{}
		cmd.Stderr = stderrs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			sessions[i], errs[i] = mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("racer-%d", i), Version: "1"}, nil).
				Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
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
