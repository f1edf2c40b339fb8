// Package catalog holds grantwire's catalog of connectors and its built-in agents:
// embedded defaults (catalog.json, agents.json) that a file can override. The catalog is
// data for the policy (data.catalog, and data.agents.builtin); the policy validates it
// (operation validate_catalog) and decides everything about connectors. This package only
// loads the JSON and shows entries to people (the CLI's listings).
//
// # Entry format
//
// A catalog is {"connectors": {id: entry}}. Every entry has "type" (oauth_pkce, mcp_server
// or mcp_remote) and, for people, "display_name", "description", "tier", "category" and
// "docs_url". docs/behaviour.md#catalog describes every field; the policy (package
// grantwire.catalog) is the validator.
//
// It imports the standard library only.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/internal/safefile"
)

//go:embed catalog.json
var defaults []byte

//go:embed agents.json
var builtinAgents []byte

// Defaults returns the embedded catalog as JSON.
func Defaults() []byte { return append([]byte(nil), defaults...) }

// Types of connectors.
const (
	TypeOAuth     = "oauth_pkce"
	TypeMCPServer = "mcp_server"
	TypeMCPRemote = "mcp_remote"
)

// Tiers of the embedded catalog, in display order.
var Tiers = []string{"core", "productivity", "dev", "search"}

// MaxFileBytes bounds a catalog file (8 MiB; the embedded catalog is about 24 KiB).
const MaxFileBytes = 8 << 20

// EnvKey is one environment value an MCP server takes.
type EnvKey struct {
	Key         string `json:"key"`
	Required    bool   `json:"required"`
	Secret      bool   `json:"secret"`
	Description string `json:"description,omitempty"`
}

// Entry is a catalog entry as people see it.
type Entry struct {
	ID                      string            `json:"id,omitempty"`
	Type                    string            `json:"type"`
	DisplayName             string            `json:"display_name,omitempty"`
	Description             string            `json:"description,omitempty"`
	Tier                    string            `json:"tier,omitempty"`
	Category                string            `json:"category,omitempty"`
	DocsURL                 string            `json:"docs_url,omitempty"`
	AuthorizationURL        string            `json:"authorization_url,omitempty"`
	TokenURL                string            `json:"token_url,omitempty"`
	UserinfoURL             string            `json:"userinfo_url,omitempty"`
	RevocationURL           string            `json:"revocation_url,omitempty"`
	DeviceAuthorizationURL  string            `json:"device_authorization_url,omitempty"`
	DeviceScopes            []string          `json:"device_scopes,omitempty"`
	Issuer                  string            `json:"issuer,omitempty"`
	TokenEndpointAuthMethod string            `json:"token_endpoint_auth_method,omitempty"`
	AuthParams              map[string]string `json:"auth_params,omitempty"`
	ClientIDEnv             string            `json:"client_id_env,omitempty"`
	ClientSecretEnv         string            `json:"client_secret_env,omitempty"`
	ClientSecretRequired    bool              `json:"client_secret_required,omitempty"`
	Tenant                  string            `json:"tenant,omitempty"`
	// RefreshTokenInactivityDays is how long the provider keeps an unused refresh token
	// (Microsoft: 90); serve's health pass uses the token before then.
	RefreshTokenInactivityDays int      `json:"refresh_token_inactivity_days,omitempty"`
	ScopeSeparator             string   `json:"scope_separator,omitempty"`
	DefaultScopes              []string `json:"default_scopes,omitempty"`
	AvailableScopes            []string `json:"available_scopes,omitempty"`
	Command                    string   `json:"command,omitempty"`
	Args                       []string `json:"args,omitempty"`
	Env                        []EnvKey `json:"env,omitempty"`
	URL                        string   `json:"url,omitempty"`
}

// Name is the display name, or the id when there is none.
func (e Entry) Name() string {
	if e.DisplayName != "" {
		return e.DisplayName
	}
	return e.ID
}

// EnvKey returns the declaration of an environment key.
func (e Entry) EnvKey(key string) (EnvKey, bool) {
	for _, k := range e.Env {
		if k.Key == key {
			return k, true
		}
	}
	return EnvKey{}, false
}

// Catalog is a loaded catalog.
type Catalog struct {
	raw        []byte
	connectors map[string]json.RawMessage
	entries    map[string]Entry
	builtins   json.RawMessage
	strict     bool
	source     string
}

// Default returns the embedded catalog with the built-in agents.
func Default() *Catalog {
	c, err := Load(defaults)
	if err != nil {
		panic(err) // the embedded catalog is tested
	}
	c.builtins = builtinAgents
	return c
}

// Load parses catalog JSON ({"connectors": {id: entry}}); nil loads the defaults (with
// the built-in agents). It refuses what is not JSON, a connector id written twice and
// entries that are not objects; the policy judges the rest (validate_catalog).
func Load(raw []byte) (*Catalog, error) {
	if raw == nil {
		return Default(), nil
	}
	var doc struct {
		Connectors map[string]json.RawMessage `json:"connectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := duplicateIDs(raw); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c := &Catalog{raw: raw, connectors: doc.Connectors, entries: map[string]Entry{}}
	for id, rawEntry := range doc.Connectors {
		var e Entry
		if err := json.Unmarshal(rawEntry, &e); err != nil {
			return nil, fmt.Errorf("catalog: connector %q: %w", id, err)
		}
		e.ID = id
		c.entries[id] = e
	}
	return c, nil
}

// LoadFile loads a catalog file that replaces the embedded one (a regular file of at most
// MaxFileBytes), with the built-in agents. It is validated strictly (Strict): unknown
// fields are refused and what a working connector needs is required.
func LoadFile(path string) (*Catalog, error) {
	raw, _, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := jsonx.Check(raw); err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", path, err)
	}
	c, err := Load(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	c.builtins, c.strict, c.source = builtinAgents, true, path
	return c, nil
}

// Source is the file a catalog came from ("" for the embedded one or JSON given directly).
func (c *Catalog) Source() string { return c.source }

// Strict reports whether the catalog came from a user's file (validated strictly).
func (c *Catalog) Strict() bool { return c.strict }

// BuiltinAgents returns the built-in agents the catalog carries (the JSON list that
// becomes data.agents.builtin), or nil when it carries none.
func (c *Catalog) BuiltinAgents() json.RawMessage {
	if c.builtins == nil {
		return nil
	}
	var b struct {
		Agents json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(c.builtins, &b); err != nil {
		panic(err) // set by this package, always an object
	}
	return append(json.RawMessage(nil), b.Agents...)
}

// WithBuiltinAgents returns a copy of the catalog that carries list as its built-in agents
// (a JSON array, as data.agents.builtin holds it: an OPA bundle's agents; nil: none). The
// policy judges the agents; this only requires a JSON array.
func (c *Catalog) WithBuiltinAgents(list json.RawMessage) (*Catalog, error) {
	out := *c
	out.builtins = nil
	if list == nil {
		return &out, nil
	}
	var agents []json.RawMessage
	if err := json.Unmarshal(list, &agents); err != nil {
		return nil, fmt.Errorf("catalog: the built-in agents must be a JSON array: %w", err)
	}
	doc, err := json.Marshal(map[string]json.RawMessage{"agents": list})
	if err != nil {
		return nil, fmt.Errorf("catalog: the built-in agents: %w", err)
	}
	out.builtins = doc
	return &out, nil
}

// duplicateIDs refuses a connectors object that names an id twice (encoding/json would
// silently keep the last one).
func duplicateIDs(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = errors.New("the catalog must be a JSON object")
		}
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if t != "connectors" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			if err == nil {
				err = errors.New(`"connectors" must be an object of entries`)
			}
			return err
		}
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			id, _ := t.(string)
			if seen[id] {
				return fmt.Errorf("connector id %q appears twice", id)
			}
			seen[id] = true
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
	}
	return nil
}

// Data is the policy's data document: {"catalog": {"connectors": ...}} and, with the
// built-in agents, {"agents": {"builtin": [...]}}.
func (c *Catalog) Data() []byte {
	doc := map[string]any{"catalog": map[string]any{"connectors": c.connectors}}
	if c.builtins != nil {
		var b struct {
			Agents json.RawMessage `json:"agents"`
		}
		if err := json.Unmarshal(c.builtins, &b); err != nil {
			panic(err)
		}
		doc["agents"] = map[string]any{"builtin": b.Agents}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

// JSON returns the catalog document as loaded ({"connectors": ...}).
func (c *Catalog) JSON() []byte { return append([]byte(nil), c.raw...) }

// Entry returns a whole entry.
func (c *Catalog) Entry(id string) (Entry, bool) {
	e, ok := c.entries[id]
	return e, ok
}

// Entries returns every entry, sorted by tier (in the order of Tiers, other tiers after,
// alphabetically) and then by id.
func (c *Catalog) Entries() []Entry {
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	rank := func(t string) int {
		for i, x := range Tiers {
			if x == t {
				return i
			}
		}
		return len(Tiers)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank(out[i].Tier), rank(out[j].Tier)
		if ri != rj {
			return ri < rj
		}
		if out[i].Tier != out[j].Tier {
			return out[i].Tier < out[j].Tier
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// IDs returns every connector id, sorted.
func (c *Catalog) IDs() []string {
	out := make([]string, 0, len(c.entries))
	for id := range c.entries {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Raw returns an entry's JSON as written in the catalog.
func (c *Catalog) Raw(id string) json.RawMessage { return c.connectors[id] }
