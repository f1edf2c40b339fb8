package nodiff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Catalog is policy data ({"catalog": {"connectors": ...}, "agents": {"builtin": [...]}})
// with what the generator draws from it: connector ids by type, the scopes and
// environment keys each declares, the built-in agents.
type Catalog struct {
	Name     string
	Data     []byte   // the engines' data document
	IDs      []string // sorted connector ids
	Builtins []string // ids of the built-in agents

	entries map[string]map[string]any
	byType  map[string][]string
}

// NewCatalog indexes a data document for the generator.
func NewCatalog(name string, data []byte) (*Catalog, error) {
	var doc struct {
		Catalog struct {
			Connectors any `json:"connectors"`
		} `json:"catalog"`
		Agents struct {
			Builtin any `json:"builtin"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("nodiff: catalog %s: %w", name, err)
	}
	c := &Catalog{Name: name, Data: data, entries: map[string]map[string]any{}, byType: map[string][]string{}}
	conns, _ := doc.Catalog.Connectors.(map[string]any)
	for id, entry := range conns {
		c.IDs = append(c.IDs, id)
		e, _ := entry.(map[string]any)
		c.entries[id] = e
		t, _ := e["type"].(string)
		c.byType[t] = append(c.byType[t], id)
	}
	sort.Strings(c.IDs)
	for _, ids := range c.byType {
		sort.Strings(ids)
	}
	if list, ok := doc.Agents.Builtin.([]any); ok {
		for _, a := range list {
			if id, ok := field(a, "id").(string); ok {
				c.Builtins = append(c.Builtins, id)
			}
		}
	}
	return c, nil
}

// MustCatalog is NewCatalog for data known to be valid.
func MustCatalog(name string, data []byte) *Catalog {
	c, err := NewCatalog(name, data)
	if err != nil {
		panic(err)
	}
	return c
}

// OfType returns the ids of a connector type, sorted.
func (c *Catalog) OfType(t string) []string { return c.byType[t] }

// strs returns the strings of an entry's list member (default_scopes, ...).
func (c *Catalog) strs(id, member string) []string {
	var out []string
	list, _ := c.entries[id][member].([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// envKeys returns the environment keys a catalog MCP server declares.
func (c *Catalog) envKeys(id string) (all, required []string) {
	list, _ := c.entries[id]["env"].([]any)
	for _, e := range list {
		k, ok := field(e, "key").(string)
		if !ok {
			continue
		}
		all = append(all, k)
		if field(e, "required") == true {
			required = append(required, k)
		}
	}
	return all, required
}

// SyntheticData is a catalog that exercises every branch the catalog can steer: OAuth
// providers with every client authentication, a default tenant in the path and in the
// host, an issuer or none, a userinfo and a revocation endpoint or none, endpoints on
// plain loopback HTTP, endpoints the transport rule refuses or that are missing, a comma
// scope separator, malformed members; local MCP servers with required, optional, secret
// and no environment keys (one without a command, one whose env is not a list); a remote
// MCP server; and built-in agents that declare scopes, none, or consume MCP servers.
const SyntheticData = `{"catalog":{"connectors":{
 "google":{"type":"oauth_pkce","display_name":"Google","tier":"core","category":"productivity",
  "authorization_url":"https://accounts.example.com/o/oauth2/auth","token_url":"https://oauth2.example.com/token",
  "userinfo_url":"https://openid.example.com/v1/userinfo","revocation_url":"https://oauth2.example.com/revoke",
  "issuer":"https://accounts.example.com","client_id_env":"GOOGLE_CLIENT_ID","client_secret_env":"GOOGLE_CLIENT_SECRET",
  "client_secret_required":true,"auth_params":{"access_type":"offline","prompt":"consent"},
  "default_scopes":["openid","email"],
  "available_scopes":["openid","email","profile","offline_access","https://www.googleapis.com/auth/gmail.readonly"]},
 "microsoft":{"type":"oauth_pkce","display_name":"Microsoft","tenant":"consumers",
  "authorization_url":"https://login.example.com/{tenant}/oauth2/v2.0/authorize",
  "token_url":"https://login.example.com/{tenant}/oauth2/v2.0/token",
  "userinfo_url":"https://graph.example.com/oidc/userinfo","token_endpoint_auth_method":"client_secret_post",
  "refresh_token_inactivity_days":90,"default_scopes":["openid","offline_access"]},
 "github":{"type":"oauth_pkce","authorization_url":"https://github.example/login/oauth/authorize",
  "token_url":"https://github.example/login/oauth/access_token","userinfo_url":"https://api.github.example/user",
  "scope_separator":",","token_endpoint_auth_method":"none","default_scopes":["read:user"]},
 "local":{"type":"oauth_pkce","authorization_url":"http://127.0.0.1:8765/authorize","token_url":"http://127.0.0.1:8765/token",
  "userinfo_url":"http://[::1]:8765/userinfo","revocation_url":"http://localhost:8765/revoke","issuer":"http://127.0.0.1:8765"},
 "insecure":{"type":"oauth_pkce","authorization_url":"https://auth.example.org/authorize","token_url":"http://auth.example.org/token",
  "userinfo_url":"https://auth.example.org/userinfo","revocation_url":"https://user:pw@auth.example.org/revoke","default_scopes":["openid"]},
 "noendpoints":{"type":"oauth_pkce","default_scopes":["openid"]},
 "tenanted":{"type":"oauth_pkce","tenant":"common","authorization_url":"https://{tenant}.auth.example.net/authorize",
  "token_url":"https://{tenant}.auth.example.net/token","userinfo_url":"https://{tenant}.auth.example.net/me",
  "revocation_url":"https://{tenant}.auth.example.net/revoke","token_endpoint_auth_method":"client_secret_basic"},
 "odd":{"type":"oauth_pkce","default_scopes":"openid","tenant":7,"client_id_env":"","token_endpoint_auth_method":"bogus",
  "scope_separator":"","issuer":"","authorization_url":"https://odd.example/{tenant}/auth","token_url":"https://odd.example/token"},
 "hostname":{"type":"oauth_pkce","tenant":"login.example.com","authorization_url":"https://{tenant}/authorize",
  "token_url":"https://{tenant}/token","userinfo_url":"https://{tenant}:8443/userinfo","revocation_url":"https://{tenant}/revoke"},
 "dotted.id-x":{"type":"oauth_pkce","authorization_url":"https://dotted.example/auth","token_url":"https://dotted.example/token",
  "client_secret_required":true,"client_secret_env":"DOTTED_SECRET","auth_params":{"audience":"api"}},
 "mcp-github":{"type":"mcp_server","display_name":"GitHub (MCP)","command":"npx","args":["-y","server-github"],
  "env":[{"key":"GITHUB_TOKEN","required":true,"secret":true}]},
 "mcp-memory":{"type":"mcp_server","command":"npx","args":["-y","server-memory"],"env":[{"key":"MEMORY_FILE_PATH"}]},
 "mcp-multi":{"type":"mcp_server","command":"multi","env":[{"key":"A","required":true},{"key":"B"},{"key":"C","required":true,"secret":true}]},
 "mcp-bare":{"type":"mcp_server"},
 "mcp-badenv":{"type":"mcp_server","command":"x","env":"A"},
 "remote-docs":{"type":"mcp_remote","display_name":"Docs","tier":"beta","url":"https://docs.example.com/mcp"}
}},
"agents":{"builtin":[
 {"id":"builtin:chat","name":"Chat","consumes_mcp_servers":true},
 {"id":"builtin:email","name":"Email","required_connectors":[
  {"connector":"google","scopes":["email","https://www.googleapis.com/auth/gmail.readonly"]},
  {"connector":"microsoft","scopes":["openid"]},{"connector":"local","scopes":["mail"]}]},
 {"id":"builtin:code","required_connectors":[{"connector":"mcp-github","scopes":["use"]},{"connector":"github","scopes":["read:user","repo"]},
  {"connector":"mcp-multi","scopes":["use","admin"]}]},
 {"id":"builtin:idle","required_connectors":[{"connector":"google","scopes":[]}]}
]}}`

// Synthetic returns the catalog of SyntheticData.
func Synthetic() *Catalog { return MustCatalog("synthetic", []byte(SyntheticData)) }

// HostileData is a catalog whose entries carry every problem validate_catalog names
// (ids, types, scopes, environment names, tenants, client authentication, fields of the
// wrong type of connector, environment keys, auth_params, every refusal of the transport
// rule in a URL, {tenant} where no tenant is configured, and what strict validation
// requires), next to a few usable entries; the other operations run on it too.
var HostileData = `{"catalog":{"connectors":{
 "Bad ID!":{"type":"oauth_pkce","display_name":"x","tier":"t"},
 "zoë":{"type":"oauth_pkce","authorization_url":"https://zo.example/auth","token_url":"https://zo.example/token","tenant":"Tenant-1"},
 "notobject":"x",
 "untyped":{"display_name":"x"},
 "weird-type":{"type":"ldap","display_name":"x","tier":"t"},
 "scopes-bad":{"type":"oauth_pkce","default_scopes":["a b","a b"],"available_scopes":"x","scope_separator":";"},
 "defaults-out":{"type":"oauth_pkce","default_scopes":["a","b"],"available_scopes":["a"],"client_secret_required":true},
 "env-names":{"type":"oauth_pkce","client_id_env":"lower","client_secret_env":7,"tenant":"bad tenant!",
  "token_endpoint_auth_method":"magic","scope_separator":",","colour":"red","refresh_token_inactivity_days":7},
 "oauth-on-mcp":{"type":"mcp_server","tenant":"x","client_id_env":"X","issuer":"https://x.example","command":"  "},
 "mcp-on-oauth":{"type":"oauth_pkce","command":"x","args":[],"env":[]},
 "env-bad":{"type":"mcp_server","command":"x","env":"A"},
 "env-keys":{"type":"mcp_server","command":"x","env":[{"key":"1BAD"},{"key":"OK","required":true},{"key":"OK"},"str"]},
 "env-dup":{"type":"mcp_server","command":"x","env":[{"key":"OK","required":true},{"key":"OK"}]},
 "params":{"type":"oauth_pkce","auth_params":{"a":1}},
 "params2":{"type":"oauth_pkce","auth_params":["x"]},
 "remote-nourl":{"type":"mcp_remote","url":7},
 "u-long":{"type":"oauth_pkce","authorization_url":"https://x.example/` + longPath + `","token_url":"https://x.example/a b",
  "userinfo_url":"https://x.example/é","revocation_url":"https://x.example/\u0000","device_authorization_url":"ftp://x.example/",
  "issuer":"HTTPS://x.example","docs_url":"https://u:p@x.example/"},
 "u-host":{"type":"oauth_pkce","authorization_url":"https:///path","token_url":"https://x.example:99999/","userinfo_url":"https://x.example:abc/",
  "revocation_url":"https://[::1]:0/","device_authorization_url":"https://x%2eexample/","issuer":"https://[zz::1]/","docs_url":"https://a:b:c/"},
 "u-ip":{"type":"oauth_pkce","tenant":"t","authorization_url":"https://127.1/{tenant}","token_url":"https://0x7f.0.0.1/",
  "userinfo_url":"https://[::ffff:127.0.0.1]/","revocation_url":"https://169.254.169.254/","device_authorization_url":"https://[fe80::1]/",
  "issuer":"http://example.com/","docs_url":"http://127.0.0.1:8080/ok"},
 "u-ok":{"type":"oauth_pkce","display_name":"OK","tier":"t","authorization_url":"http://[::1]/auth","token_url":"https://[2001:db8::1]:8443/token",
  "userinfo_url":"https://2130706433/","revocation_url":"https://[fe80::1%25eth0]/","client_id_env":"OK_ID","default_scopes":["a"],"available_scopes":["a"],
  "docs_url":"https://x.example/{tenant}"},
 "u-ip2":{"type":"mcp_remote","url":"https://127.0.0.01/","docs_url":"https://[::ffff:7f00:1]/"},
 "u-ip3":{"type":"mcp_remote","url":"https://[0:0:0:0:0:ffff:127.0.0.1]/","docs_url":"https://[FE80::1]/"},
 "u-ip4":{"type":"mcp_remote","url":"https://[::127.0.0.1]/","docs_url":"https://x.example:080/"},
 "u-ip5":{"type":"mcp_remote","url":"http://127.255.255.255:65535/x","docs_url":"http://[::1]:1/"},
 "u-tenant":{"type":"mcp_remote","url":"https://x.example/{tenant}/mcp","docs_url":"https://x.example/docs"}
}},
"agents":{"builtin":[{"id":"builtin:chat","consumes_mcp_servers":true},{"id":"builtin:odd","required_connectors":[{"connector":"zoë","scopes":["use"]}]}]}}`

var longPath = func() string {
	b := make([]byte, 4100)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}()

// Hostile returns the catalog of HostileData.
func Hostile() *Catalog { return MustCatalog("hostile", []byte(HostileData)) }

// BrokenData is policy data whose connectors are not an object and whose built-in agents
// are not a list: the policy must treat every connector as unknown and know no built-in.
const BrokenData = `{"catalog":{"connectors":["google","mcp-github"]},"agents":{"builtin":{"id":"builtin:chat"}}}`

// Broken returns the catalog of BrokenData.
func Broken() *Catalog {
	c := MustCatalog("broken", []byte(BrokenData))
	c.IDs = []string{"google", "mcp-github"} // ids it lacks, for the generator to ask about
	return c
}

// Scaled returns a catalog of n connectors (every fifth a local MCP server, every
// seventh a remote one, the rest OAuth providers with https endpoints), named c000, c001, ...
func Scaled(n int) *Catalog {
	conns := map[string]any{}
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		switch {
		case i%5 == 4:
			conns[id] = map[string]any{"type": "mcp_server", "command": "npx", "args": []string{"-y", id},
				"env": []any{map[string]any{"key": "TOKEN", "required": true, "secret": true}}}
		case i%7 == 6:
			conns[id] = map[string]any{"type": "mcp_remote", "url": "https://" + id + ".example.com/mcp"}
		default:
			base := "https://" + id + ".example.com/oauth/"
			conns[id] = map[string]any{"type": "oauth_pkce", "display_name": id,
				"authorization_url": base + "authorize", "token_url": base + "token", "userinfo_url": base + "userinfo",
				"client_id_env": "GRANTWIRE_" + strings.ToUpper(id) + "_CLIENT_ID", "default_scopes": []string{"openid"},
				"available_scopes": []string{"openid", "email", "s1", "s2", "s3", "s4", "s5", "s6"}}
		}
	}
	data, err := json.Marshal(map[string]any{
		"catalog": map[string]any{"connectors": conns},
		"agents":  map[string]any{"builtin": []any{map[string]any{"id": "builtin:chat", "consumes_mcp_servers": true}}},
	})
	if err != nil {
		panic(err)
	}
	return MustCatalog(fmt.Sprintf("scaled-%d", n), data)
}
