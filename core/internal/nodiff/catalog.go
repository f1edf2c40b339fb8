package nodiff

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Catalog is policy data ({"catalog": {"connectors": ...}}) with the ids the generator
// draws from.
type Catalog struct {
	Name   string
	Data   []byte   // the engines' data document
	IDs    []string // sorted connector ids
	anyIDs []any
	byType map[string][]any
}

// NewCatalog indexes a data document for the generator.
func NewCatalog(name string, data []byte) (*Catalog, error) {
	var doc struct {
		Catalog struct {
			Connectors any `json:"connectors"`
		} `json:"catalog"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("nodiff: catalog %s: %w", name, err)
	}
	c := &Catalog{Name: name, Data: data, byType: map[string][]any{}}
	conns, _ := doc.Catalog.Connectors.(map[string]any)
	for id, entry := range conns {
		c.IDs = append(c.IDs, id)
		e, _ := entry.(map[string]any)
		t, _ := e["type"].(string)
		c.byType[t] = append(c.byType[t], id)
	}
	sort.Strings(c.IDs)
	for _, id := range c.IDs {
		c.anyIDs = append(c.anyIDs, id)
	}
	if len(c.anyIDs) == 0 {
		c.anyIDs = []any{"google", "mcp-github"} // a catalog without connectors: ids it lacks
	}
	for _, ids := range c.byType {
		sort.Slice(ids, func(i, j int) bool { return ids[i].(string) < ids[j].(string) })
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

// SyntheticData is a catalog that exercises every branch the catalog can steer: OAuth
// providers with and without a tenant, a required client secret and default scopes (one
// with malformed default scopes), local MCP servers with required, optional and no
// environment keys (one without a command), and a remote MCP server.
const SyntheticData = `{"catalog":{"connectors":{
 "google":{"type":"oauth_pkce","display_name":"Google","tier":"core","category":"productivity","client_secret_required":true,"default_scopes":["openid","email"]},
 "microsoft":{"type":"oauth_pkce","display_name":"Microsoft","tenant":"consumers","default_scopes":["openid","offline_access"]},
 "github":{"type":"oauth_pkce"},
 "odd":{"type":"oauth_pkce","default_scopes":"openid","tenant":7},
 "mcp-github":{"type":"mcp_server","display_name":"GitHub (MCP)","command":"npx","args":["-y","server-github"],"env":[{"key":"GITHUB_TOKEN","required":true,"secret":true}]},
 "mcp-memory":{"type":"mcp_server","command":"npx","args":["-y","server-memory"],"env":[]},
 "mcp-multi":{"type":"mcp_server","env":[{"key":"A","required":true},{"key":"B"},{"key":"C","required":true}]},
 "mcp-bare":{"type":"mcp_server"},
 "remote-docs":{"type":"mcp_remote","display_name":"Docs","tier":"beta"}
}}}`

// Synthetic returns the catalog of SyntheticData.
func Synthetic() *Catalog { return MustCatalog("synthetic", []byte(SyntheticData)) }

// BrokenData is policy data whose connectors are not an object: the policy must treat
// every connector as unknown.
const BrokenData = `{"catalog":{"connectors":["google","mcp-github"]}}`

// Broken returns the catalog of BrokenData.
func Broken() *Catalog { return MustCatalog("broken", []byte(BrokenData)) }

// Scaled returns a catalog of n connectors (every fifth a local MCP server, every
// seventh a remote one, the rest OAuth providers), named c000, c001, ...
func Scaled(n int) *Catalog {
	conns := map[string]any{}
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		switch {
		case i%5 == 4:
			conns[id] = map[string]any{"type": "mcp_server", "command": "npx", "args": []string{"-y", id},
				"env": []any{map[string]any{"key": "TOKEN", "required": true}}}
		case i%7 == 6:
			conns[id] = map[string]any{"type": "mcp_remote"}
		default:
			conns[id] = map[string]any{"type": "oauth_pkce", "display_name": id, "default_scopes": []string{"openid"},
				"available_scopes": []string{"openid", "email", "s1", "s2", "s3", "s4", "s5", "s6"}}
		}
	}
	data, err := json.Marshal(map[string]any{"catalog": map[string]any{"connectors": conns}})
	if err != nil {
		panic(err)
	}
	return MustCatalog(fmt.Sprintf("scaled-%d", n), data)
}
