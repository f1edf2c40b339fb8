package nativeshell

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheCatalogPointsAtTheLocalServer(t *testing.T) {
	raw := []byte(`{"connectors": {
		"google": {"type": "oauth_pkce", "authorization_url": "https://accounts.google.com/o/oauth2/v2/auth",
			"token_url": "https://oauth2.googleapis.com/token", "userinfo_url": "https://openidconnect.googleapis.com/v1/userinfo",
			"default_scopes": ["openid"]},
		"microsoft": {"type": "oauth_pkce", "tenant": "consumers",
			"authorization_url": "https://login.microsoftonline.com/consumers/oauth2/v2.0/authorize",
			"token_url": "https://login.microsoftonline.com/consumers/oauth2/v2.0/token"},
		"placeholder": {"type": "oauth_pkce", "authorization_url": "https://{tenant}.example.com/authorize",
			"token_url": "https://{tenant}.example.com/token"},
		"mcp-github": {"type": "mcp_server", "command": "npx", "args": ["-y"]}
	}, "extra": 1}`)
	out, err := patchCatalog(raw, "http://127.0.0.1:9")
	require.NoError(t, err)
	var doc struct {
		Connectors map[string]map[string]any `json:"connectors"`
		Extra      int                       `json:"extra"`
	}
	require.NoError(t, json.Unmarshal(out, &doc))
	c := doc.Connectors
	require.Equal(t, "http://127.0.0.1:9/p/google/authorize", c["google"]["authorization_url"])
	require.Equal(t, "http://127.0.0.1:9/p/google/token", c["google"]["token_url"])
	require.Equal(t, "http://127.0.0.1:9/p/google/userinfo", c["google"]["userinfo_url"])
	require.Equal(t, []any{"openid"}, c["google"]["default_scopes"])
	require.Equal(t, "http://127.0.0.1:9/p/microsoft/consumers/token", c["microsoft"]["token_url"], "the tenant segment stays")
	require.NotContains(t, c["microsoft"], "userinfo_url")
	require.Equal(t, "http://127.0.0.1:9/p/placeholder/{tenant}/token", c["placeholder"]["token_url"])
	require.Equal(t, map[string]any{"type": "mcp_server", "command": "npx", "args": []any{"-y"}}, c["mcp-github"])
	require.Equal(t, 1, doc.Extra)

	data, err := patchData([]byte(`{"catalog": `+string(raw)+`}`), "http://127.0.0.1:9")
	require.NoError(t, err)
	require.Contains(t, string(data), `"token_url":"http://127.0.0.1:9/p/google/token"`)
}

func TestChunkPartsAreFolded(t *testing.T) {
	for user, part := range map[string]bool{"google:default": false, "google:default#0": true, "a#12": true,
		"a#": false, "a#x1": false, "mcp-x:KEY": false} {
		require.Equal(t, part, isChunkPart(user), user)
	}
}
