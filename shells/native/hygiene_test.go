package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/mcp"
	"github.com/grantwire/grantwire/shells/native"
)

// Distinctive secrets are planted everywhere a secret enters (client secret, tokens the
// server issues, a forwarded refresh token, an MCP API key); after a full run none of them
// is in any file under the home, any log line, any error, any event or any decision.
func TestSecretHygiene(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	const (
		clientSecret = "PLANTEDsecret-client-0d9f"
		mcpKey       = "PLANTEDsecret-mcp-key-77ab"
		tokenPrefix  = "PLANTEDtok"
	)
	planted := []string{clientSecret, mcpKey, tokenPrefix, "PLANTED"}

	var mu sync.Mutex
	var logs, errs, decisions []string
	record := func(dst *[]string, s string) { mu.Lock(); *dst = append(*dst, s); mu.Unlock() }
	clock := &testClock{now: time.Now()}
	w := newWorld(t, worldOpts{
		server: &authserver.Config{ClientID: "cid", ClientSecret: clientSecret, TokenPrefix: tokenPrefix},
		tweak:  func(o *native.Options) { o.Clock = clock },
		options: []grantwire.Option{grantwire.WithObserver(func(d grantwire.Decision) {
			b, _ := json.Marshal(d)
			record(&decisions, string(b))
		}), grantwire.WithTrace(func(line string) { record(&logs, line) })},
	})
	events, stop := w.shell.Events().Subscribe(1024)
	defer stop()
	try := func(err error) {
		if err != nil {
			record(&errs, err.Error())
			var ge *grantwire.Error
			if errors.As(err, &ge) {
				b, _ := json.Marshal(ge)
				record(&errs, string(b))
			}
		}
	}

	var handed []string // what the caller legitimately receives
	_, cerr := w.client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid", ClientSecret: clientSecret})
	try(cerr)
	_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, []string{"builtin:chat"})
	require.NoError(t, err)
	for range 3 {
		tok, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		require.NoError(t, err)
		handed = append(handed, tok.AccessToken)
		clock.Advance(2 * time.Hour)
	}
	for _, f := range []authserver.Failure{{Status: http.StatusUnauthorized, Error: "invalid_client"}, {Status: 500}, {Error: "invalid_grant"}} {
		w.srv.Script(f)
		_, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		require.Error(t, err)
		try(err)
	}
	_, err = w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:other")
	try(err)

	// A forwarded connection with a planted refresh token, then a refresh with it.
	fwdRT := w.srv.Issue([]string{"mail.read"})
	require.True(t, strings.HasPrefix(fwdRT, tokenPrefix))
	_, err = w.client.ImportForwarded(ctx, grantwire.Forwarded{Provider: "local", ClientID: "cid", ClientSecret: clientSecret,
		RefreshToken: fwdRT, Scopes: []string{"mail.read"}, AccountEmail: "ada@example.com", GrantAgents: []string{"builtin:chat"}})
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)
	tok, err := w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
	require.NoError(t, err)
	handed = append(handed, tok.AccessToken)

	_, err = w.client.Configure(ctx, "mcp-github", grantwire.ConfigureInput{Env: map[string]string{"GITHUB_TOKEN": mcpKey}})
	try(err)
	_, err = w.client.Activate(ctx, "mcp-github", "builtin:mcp-user", nil)
	require.NoError(t, err)
	cred, err := mcp.Of(w.client).Credential(ctx, "mcp-github", "builtin:mcp-user")
	require.NoError(t, err)
	require.Equal(t, mcpKey, cred.Env["GITHUB_TOKEN"])
	_, err = mcp.Of(w.client).Credential(ctx, "mcp-github", "builtin:chat")
	try(err)
	st, err := w.client.Status(ctx)
	require.NoError(t, err)
	conns, _, err := w.client.Connections(ctx)
	require.NoError(t, err)
	listing, _ := json.Marshal([]any{st, conns})
	record(&logs, string(listing))

	// Positive controls: the secrets really went through (and are in the keyring).
	for _, h := range handed {
		require.True(t, strings.HasPrefix(h, tokenPrefix))
	}
	raw, err := gokeyring.Get(w.service, "provider:local")
	require.NoError(t, err)
	require.Contains(t, raw, clientSecret)
	raw, err = gokeyring.Get(w.service, "local:default")
	require.NoError(t, err)
	require.Contains(t, raw, tokenPrefix)
	raw, err = gokeyring.Get(w.service, "mcp-github:GITHUB_TOKEN")
	require.NoError(t, err)
	require.Equal(t, mcpKey, raw)

	_, err = w.client.Disconnect(ctx, "local")
	require.NoError(t, err)
	_, err = w.client.Disconnect(ctx, "mcp-github")
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // let the watcher settle
	stop()
	var evs []string
	for e := range events {
		evs = append(evs, e.Type+" "+string(e.Payload))
	}
	require.NotEmpty(t, evs)
	require.NotEmpty(t, logs)
	require.NotEmpty(t, errs)
	require.NotEmpty(t, decisions)
	logs = append(logs, w.prompt.String())

	for _, s := range planted {
		for _, ch := range []struct {
			name  string
			lines []string
		}{{"log", logs}, {"error", errs}, {"event", evs}, {"decision", decisions}} {
			for _, l := range ch.lines {
				require.NotContains(t, l, s, "a planted secret in a %s", ch.name)
			}
		}
		assertNoSecretUnder(t, w.home, s)
	}
	var files int
	require.NoError(t, filepath.Walk(w.home, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			files++
		}
		return err
	}))
	t.Logf("searched %d files, %d log lines, %d errors, %d events, %d decisions", files, len(logs), len(errs), len(evs), len(decisions))
}

var _ hostabi.Events = (*native.Bus)(nil)
