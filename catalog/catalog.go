// Package catalog holds grantwire's catalog of connectors: embedded defaults
// (catalog.json) that a file can override, validated once at load. The catalog is data for
// the policy (data.catalog) and tells the shells where each provider's endpoints are.
//
// It imports hostabi for the Connector type and nothing else of grantwire.
package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/grantwire/grantwire/hostabi"
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

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// Catalog is a validated catalog.
type Catalog struct {
	raw        []byte
	connectors map[string]json.RawMessage
	parsed     map[string]hostabi.Connector
}

// Load validates catalog JSON ({"connectors": {id: entry}}); nil loads the defaults.
func Load(raw []byte) (*Catalog, error) {
	if raw == nil {
		raw = defaults
	}
	var doc struct {
		Connectors map[string]json.RawMessage `json:"connectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if len(doc.Connectors) == 0 {
		return nil, fmt.Errorf("catalog: no connectors")
	}
	c := &Catalog{raw: raw, connectors: doc.Connectors, parsed: map[string]hostabi.Connector{}}
	for id, entry := range doc.Connectors {
		if !idPattern.MatchString(id) {
			return nil, fmt.Errorf("catalog: connector id %q must be 1-64 of a-z 0-9 _ . - starting with a letter or digit", id)
		}
		var k hostabi.Connector
		if err := json.Unmarshal(entry, &k); err != nil {
			return nil, fmt.Errorf("catalog: %s: %w", id, err)
		}
		k.ID = id
		switch k.Type {
		case TypeOAuth, TypeMCPServer, TypeMCPRemote:
		default:
			return nil, fmt.Errorf("catalog: %s: unknown type %q", id, k.Type)
		}
		c.parsed[id] = k
	}
	return c, nil
}

// Data is the policy's data document: {"catalog": {"connectors": ...}}.
func (c *Catalog) Data() []byte {
	b, err := json.Marshal(map[string]any{"catalog": map[string]any{"connectors": c.connectors}})
	if err != nil {
		panic(err)
	}
	return b
}

// Connector returns an entry.
func (c *Catalog) Connector(id string) (hostabi.Connector, bool) {
	k, ok := c.parsed[id]
	return k, ok
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
