package hostabi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/hostabi/memhost"
	"github.com/grantwire/grantwire/internal/memshell"
)

// TestDriverConnectGrantToken drives a whole life on memhost through package host: the
// client is configured, the user connects in the (simulated) browser, an agent is refused
// and then granted, gets a token on the hot path, and refreshes it once it has expired.
// No secret reaches a host-call transcript.
func TestDriverConnectGrantToken(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Load(conformance.BaseCatalog)
	require.NoError(t, err)
	e, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(ctx) })
	w := memhost.New(time.UnixMilli(conformance.DefaultClock), 1)
	memshell.Serve(w, cat)
	h := host.New(w.Capabilities(""))
	var trace []string
	h.Trace = func(l string) { trace = append(trace, l) }
	d := &hostabi.Driver{Engine: e, Host: h}

	run := func(op string, args map[string]any, secrets map[string]string) *hostabi.Outcome {
		t.Helper()
		out, err := d.Run(ctx, op, args, secrets)
		require.NoError(t, err)
		return out
	}
	out := run("configure_client", map[string]any{"connector": "google"}, map[string]string{"client_id": "cid", "client_secret": "csecret"})
	require.Nil(t, out.Error, "%+v", out.Error)

	out = run("connect", map[string]any{"connector": "google", "scopes": []string{"gmail.readonly"}, "grant_agents": []string{}}, nil)
	require.Nil(t, out.Error, "%+v", out.Error)

	tok := map[string]any{"provider": "google", "agent": "builtin:chat", "scopes": []string{"gmail.readonly"}}
	out = run("get_access_token", tok, nil)
	require.NotNil(t, out.Error)
	require.Equal(t, "AGENT_NOT_GRANTED", out.Error.Code)

	out = run("grant", map[string]any{"connector": "google", "agent": "builtin:chat", "scopes": []string{"gmail.readonly"}}, nil)
	require.Nil(t, out.Error, "%+v", out.Error)

	out = run("get_access_token", tok, nil)
	require.Nil(t, out.Error, "%+v", out.Error)
	var res struct {
		AccessToken struct {
			Ref string `json:"$ref"`
		} `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(out.Result, &res))
	first, ok := out.Secret(res.AccessToken.Ref)
	require.True(t, ok)
	require.True(t, strings.HasPrefix(first, "access-google-"), first)

	// Expire the token: the next call refreshes under the lock, and the server rotates.
	w.Advance(2 * time.Hour)
	out = run("get_access_token", tok, nil)
	require.Nil(t, out.Error, "%+v", out.Error)
	require.NoError(t, json.Unmarshal(out.Result, &res))
	second, _ := out.Secret(res.AccessToken.Ref)
	require.NotEqual(t, first, second)
	require.Equal(t, 1, w.Server.RequestCount())

	all := strings.Join(trace, "\n")
	for _, secret := range append([]string{"csecret", first, second}, w.Server.Sent()...) {
		require.NotContains(t, all, secret)
	}
}
