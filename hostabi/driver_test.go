package hostabi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/hostabi/memhost"
)

const testCatalog = `{"catalog":{"connectors":{
 "google":{"type":"oauth_pkce","default_scopes":["openid"]},
 "mcp-github":{"type":"mcp_server","command":"npx","args":["-y","server-github"],"env":[{"key":"GITHUB_TOKEN","required":true}]}}}}`

func setup(t *testing.T) (*hostabi.Driver, *memhost.World, *hostabi.Host) {
	t.Helper()
	ctx := context.Background()
	e, err := wasmengine.New(ctx, wasmengine.WithData([]byte(testCatalog)), wasmengine.WithPoolSize(1))
	require.NoError(t, err)
	t.Cleanup(func() { e.Close(ctx) })
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	w.SetConnector(hostabi.Connector{ID: "google", Type: "oauth_pkce"})
	h := hostabi.NewHost(w.Capabilities(""))
	return &hostabi.Driver{Engine: e, Host: h}, w, h
}

func TestDriverConnectGrantToken(t *testing.T) {
	ctx := context.Background()
	d, w, _ := setup(t)
	var trace []string
	d.Host.Trace = func(l string) { trace = append(trace, l) }

	out, err := d.Run(ctx, "configure_client", map[string]any{"connector": "google", "client_id_hash": hostabi.ClientIDHash("cid"), "has_secret": true},
		map[string]string{"client_id": "cid", "client_secret": "csecret"})
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)

	out, err = d.Run(ctx, "connect", map[string]any{"connector": "google", "scopes": []string{"gmail"}, "grant_agents": []string{}}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)

	tok := map[string]any{"provider": "google", "agent": "builtin:chat", "scopes": []string{"gmail"}}
	out, err = d.Run(ctx, "get_access_token", tok, nil)
	require.NoError(t, err)
	require.Equal(t, "AGENT_NOT_GRANTED", out.Error.Code)
	require.Contains(t, out.Error.Message, "grantwire grants grant google builtin:chat --scopes gmail")

	out, err = d.Run(ctx, "grant", map[string]any{"connector": "google", "agent": "builtin:chat", "scopes": []string{"gmail"}}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error)

	out, err = d.Run(ctx, "get_access_token", tok, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)
	require.Equal(t, 1, out.Rounds, "hot path: the grant first, then one keyring round")
	var res struct {
		AccessToken struct {
			Ref string `json:"$ref"`
		} `json:"access_token"`
	}
	require.NoError(t, json.Unmarshal(out.Result, &res))
	v, ok := out.Secret(res.AccessToken.Ref)
	require.True(t, ok)
	require.True(t, strings.HasPrefix(v, "access-google-"), v)

	// Expire the token: the next call refreshes under the lock and rotates.
	w.Advance(2 * time.Hour)
	out, err = d.Run(ctx, "get_access_token", tok, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%v", out.Error)
	require.Equal(t, 1, w.Server.Requests)
	require.NotContains(t, strings.Join(trace, "\n"), "csecret")
	require.NotContains(t, strings.Join(trace, "\n"), v)
}
