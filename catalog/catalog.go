// Package catalog holds grantwire's catalog of connectors: embedded defaults
// (catalog.json) that a file can override, validated once at load. The catalog is data for
// the policy (data.catalog) and tells the shells where each provider's endpoints are.
//
// # Entry format
//
// A catalog is {"connectors": {id: entry}}. Ids are 1-64 of a-z 0-9 _ . - starting with a
// letter or digit, and unique. Every entry has "type" (oauth_pkce, mcp_server or
// mcp_remote) and, for people, "display_name", "description", "tier" (core, productivity,
// dev, search, or a tier of your own), "category" and "docs_url".
//
//   - oauth_pkce: "authorization_url", "token_url", optional "userinfo_url" (https; plain
//     http only to a loopback IP literal, for tests), "auth_params" (extra authorization
//     parameters), "client_id_env" / "client_secret_env" (where a client comes from when
//     none is configured), "client_secret_required", "tenant" (the default tenant; the
//     endpoint URLs may hold "{tenant}", see [ExpandTenant]), "scope_separator" ("" for a
//     space, or ","), "default_scopes" and "available_scopes" (default ⊆ available).
//   - mcp_server: "command", "args", and "env": [{"key", "required", "secret",
//     "description"}] — the environment values the server takes. Secret values are only
//     ever accepted from stdin or files by the CLI. Grants use the scope "use".
//   - mcp_remote: "url" of the remote MCP server.
//
// [Load] checks the shape of whatever is present (so minimal catalogs for tests load);
// [LoadFile] loads a user's override and also requires what a working connector needs,
// and rejects unknown fields, with every error naming the file.
//
// It imports hostabi for the Connector type and nothing else of grantwire.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/safefile"
	"github.com/grantwire/grantwire/internal/strictjson"
)

//go:embed catalog.json
var defaults []byte

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

// TenantPlaceholder is replaced in endpoint URLs by the client's tenant.
const TenantPlaceholder = "{tenant}"

var (
	idPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	envKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	envVarPattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)
)

// EnvKey is one environment value an MCP server takes.
type EnvKey struct {
	Key         string `json:"key"`
	Required    bool   `json:"required"`
	Secret      bool   `json:"secret"`
	Description string `json:"description,omitempty"`
}

// Entry is a whole catalog entry: what the shells need (the embedded hostabi.Connector)
// and what people see.
type Entry struct {
	hostabi.Connector
	DisplayName     string   `json:"display_name,omitempty"`
	Description     string   `json:"description,omitempty"`
	Tier            string   `json:"tier,omitempty"`
	Category        string   `json:"category,omitempty"`
	DocsURL         string   `json:"docs_url,omitempty"`
	DefaultScopes   []string `json:"default_scopes,omitempty"`
	AvailableScopes []string `json:"available_scopes,omitempty"`
	Env             []EnvKey `json:"env,omitempty"`
	URL             string   `json:"url,omitempty"`
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

// Catalog is a validated catalog.
type Catalog struct {
	raw        []byte
	connectors map[string]json.RawMessage
	parsed     map[string]hostabi.Connector
	entries    map[string]Entry
}

// MaxFileBytes is the largest catalog file LoadFile reads (8 MiB; the embedded catalog of
// 30 connectors is 24 KiB).
const MaxFileBytes = 8 << 20

// Load validates catalog JSON ({"connectors": {id: entry}}); nil loads the defaults.
func Load(raw []byte) (*Catalog, error) {
	if raw == nil {
		raw = defaults
	}
	c, err := load(raw, false)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return c, nil
}

// LoadFile loads a catalog file that replaces the embedded one. Besides Load's checks it
// requires what a working connector needs (endpoints of OAuth providers, the command of an
// MCP server, ...) and rejects unknown fields, so a typo does not silently drop a setting.
// Every error names the file. The file must be a regular file of at most MaxFileBytes
// holding strict JSON (internal/strictjson: UTF-8, no duplicated field).
func LoadFile(path string) (*Catalog, error) {
	raw, _, err := safefile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c, err := load(raw, true)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", path, err)
	}
	return c, nil
}

// Strict applies LoadFile's completeness checks to an already loaded catalog.
func (c *Catalog) Strict() error {
	_, err := load(c.raw, true)
	return err
}

func load(raw []byte, strict bool) (*Catalog, error) {
	var doc struct {
		Connectors map[string]json.RawMessage `json:"connectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if err := duplicateIDs(raw); err != nil {
		return nil, err
	}
	if strict {
		if err := strictjson.Check(raw); err != nil {
			return nil, err
		}
	}
	if len(doc.Connectors) == 0 {
		return nil, errors.New("no connectors")
	}
	c := &Catalog{raw: raw, connectors: doc.Connectors, parsed: map[string]hostabi.Connector{}, entries: map[string]Entry{}}
	for id, rawEntry := range doc.Connectors {
		if !idPattern.MatchString(id) {
			return nil, fmt.Errorf("connector id %q must be 1-64 of a-z 0-9 _ . - starting with a letter or digit", id)
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(rawEntry))
		if strict {
			dec.DisallowUnknownFields()
		}
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("connector %q: %w", id, err)
		}
		e.ID = id
		if err := check(e, strict); err != nil {
			return nil, fmt.Errorf("connector %q: %w", id, err)
		}
		c.parsed[id] = e.Connector
		c.entries[id] = e
	}
	return c, nil
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

func check(e Entry, strict bool) error {
	switch e.Type {
	case TypeOAuth, TypeMCPServer, TypeMCPRemote:
	default:
		return fmt.Errorf("unknown type %q (oauth_pkce, mcp_server or mcp_remote)", e.Type)
	}
	tenantOK := e.Type == TypeOAuth && e.Tenant != ""
	for _, u := range []struct {
		name, value string
		tenant      bool
	}{
		{"authorization_url", e.AuthorizationURL, tenantOK},
		{"token_url", e.TokenURL, tenantOK},
		{"userinfo_url", e.UserinfoURL, false},
		{"docs_url", e.DocsURL, false},
		{"url", e.URL, false},
	} {
		if u.value == "" {
			continue
		}
		if err := checkURL(u.value, u.tenant); err != nil {
			return fmt.Errorf("%s: %w", u.name, err)
		}
	}
	if err := checkScopes("default_scopes", e.DefaultScopes); err != nil {
		return err
	}
	if err := checkScopes("available_scopes", e.AvailableScopes); err != nil {
		return err
	}
	if len(e.AvailableScopes) > 0 {
		avail := map[string]bool{}
		for _, s := range e.AvailableScopes {
			avail[s] = true
		}
		for _, s := range e.DefaultScopes {
			if !avail[s] {
				return fmt.Errorf("default scope %q is not among available_scopes", s)
			}
		}
	}
	switch e.ScopeSeparator {
	case "", " ", ",":
	default:
		return fmt.Errorf("scope_separator %q must be a space or a comma", e.ScopeSeparator)
	}
	for _, name := range []struct{ field, value string }{{"client_id_env", e.ClientIDEnv}, {"client_secret_env", e.ClientSecretEnv}} {
		if name.value != "" && !envVarPattern.MatchString(name.value) {
			return fmt.Errorf("%s %q is not an environment variable name (A-Z 0-9 _)", name.field, name.value)
		}
	}
	if e.Tenant != "" && strings.ContainsAny(e.Tenant, "/?#{} ") {
		return fmt.Errorf("tenant %q must be a tenant name or id", e.Tenant)
	}
	if e.Type != TypeOAuth {
		for _, f := range []struct{ name, value string }{
			{"authorization_url", e.AuthorizationURL}, {"token_url", e.TokenURL}, {"client_id_env", e.ClientIDEnv}, {"tenant", e.Tenant},
		} {
			if f.value != "" {
				return fmt.Errorf("%s is for oauth_pkce connectors only", f.name)
			}
		}
	}
	if e.Type != TypeMCPServer && (len(e.Env) > 0 || e.Command != "") {
		return errors.New("command and env are for mcp_server connectors only")
	}
	seen := map[string]bool{}
	for i, k := range e.Env {
		if !envKeyPattern.MatchString(k.Key) {
			return fmt.Errorf("env[%d]: key %q is not an environment variable name", i, k.Key)
		}
		if seen[k.Key] {
			return fmt.Errorf("env key %s appears twice", k.Key)
		}
		seen[k.Key] = true
	}
	if !strict {
		return nil
	}
	if strings.TrimSpace(e.DisplayName) == "" {
		return errors.New("display_name is required")
	}
	if strings.TrimSpace(e.Tier) == "" {
		return errors.New("tier is required")
	}
	switch e.Type {
	case TypeOAuth:
		if e.AuthorizationURL == "" || e.TokenURL == "" {
			return errors.New("an oauth_pkce connector needs authorization_url and token_url")
		}
		if e.ClientIDEnv == "" {
			return errors.New("an oauth_pkce connector needs client_id_env")
		}
		if e.ClientSecretNeeded && e.ClientSecretEnv == "" {
			return errors.New("client_secret_required needs client_secret_env")
		}
		if len(e.DefaultScopes) == 0 || len(e.AvailableScopes) == 0 {
			return errors.New("an oauth_pkce connector needs default_scopes and available_scopes")
		}
	case TypeMCPServer:
		if strings.TrimSpace(e.Command) == "" {
			return errors.New("an mcp_server connector needs command")
		}
	case TypeMCPRemote:
		if e.URL == "" {
			return errors.New("an mcp_remote connector needs url")
		}
	}
	return nil
}

// checkURL accepts https URLs, and http only to a loopback IP literal (the transport rule
// refuses everything else at request time anyway; this catches it at load).
func checkURL(raw string, tenant bool) error {
	probe := raw
	if tenant {
		probe = strings.ReplaceAll(raw, TenantPlaceholder, "tenant")
	}
	if strings.ContainsAny(probe, "{}") {
		return fmt.Errorf("%q holds a placeholder; only %s, and only with a tenant, is replaced", raw, TenantPlaceholder)
	}
	u, err := url.Parse(probe)
	if err != nil {
		return fmt.Errorf("%q is not a URL", raw)
	}
	if u.User != nil {
		return fmt.Errorf("%q carries credentials", raw)
	}
	if u.Fragment != "" {
		return fmt.Errorf("%q has a fragment", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%q must be https (plain http only to a loopback IP)", raw)
}

func checkScopes(field string, scopes []string) error {
	seen := map[string]bool{}
	for _, s := range scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return fmt.Errorf("%s: %q is not a scope (no spaces, quotes or backslashes)", field, s)
		}
		if seen[s] {
			return fmt.Errorf("%s: %q appears twice", field, s)
		}
		seen[s] = true
	}
	return nil
}

// ExpandTenant replaces the {tenant} placeholder of an endpoint URL with a tenant (path-
// escaped). A URL without the placeholder is returned as is.
func ExpandTenant(endpoint, tenant string) string {
	if !strings.Contains(endpoint, TenantPlaceholder) {
		return endpoint
	}
	return strings.ReplaceAll(endpoint, TenantPlaceholder, url.PathEscape(tenant))
}

// Data is the policy's data document: {"catalog": {"connectors": ...}}.
func (c *Catalog) Data() []byte {
	b, err := json.Marshal(map[string]any{"catalog": map[string]any{"connectors": c.connectors}})
	if err != nil {
		panic(err)
	}
	return b
}

// JSON returns the catalog document as loaded ({"connectors": ...}).
func (c *Catalog) JSON() []byte { return append([]byte(nil), c.raw...) }

// Connector returns an entry.
func (c *Catalog) Connector(id string) (hostabi.Connector, bool) {
	k, ok := c.parsed[id]
	return k, ok
}

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
	out := make([]string, 0, len(c.parsed))
	for id := range c.parsed {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Raw returns an entry's JSON as written in the catalog.
func (c *Catalog) Raw(id string) json.RawMessage { return c.connectors[id] }
