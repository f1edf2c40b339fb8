// Package layout is grantwire's storage layout for Go code that stages or inspects a world
// outside the core: the conformance runner, the OS-shell test world, the CLI's tests and
// its store copy, and the shells' watchers (the views of a ledger they hand to the policy).
// The policy owns the layout (policy/grantwire/store, docs/behaviour.md#files); this
// package says the same once for Go, and TestLayoutMatchesPolicy (package conformance)
// keeps the two in step.
//
// It imports the standard library only.
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
)

// Ledger files, relative to the home.
const (
	Grants      = "connectors/grants.json"
	Activations = "connectors/activations.json"
	State       = "connectors/state.json"
	MCPServers  = "mcp_servers.json"
	Agents      = "agents.json"
)

// Ledgers are the ledgers by the short names the conformance corpus uses.
var Ledgers = map[string]string{
	"grants": Grants, "activations": Activations, "state": State, "mcp_servers": MCPServers, "agents": Agents,
}

// ConnectionUser is the keyring user of a provider's connection blob.
func ConnectionUser(provider string) string { return provider + ":default" }

// ClientUser is the keyring user of a provider's OAuth client.
func ClientUser(provider string) string { return "provider:" + provider }

// TokenUser is the keyring user of a provider's cached access token.
func TokenUser(provider string) string { return provider + ":access_token" }

// MCPUser is the keyring user of one environment value of an MCP server.
func MCPUser(connector, key string) string { return connector + ":" + key }

// ClientIDHash is the CRC-32 of a client id as 8 lowercase hex digits (GAIA's
// client_id_hash).
func ClientIDHash(clientID string) string {
	return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(clientID)))
}

// Version is a keyring value's version token (as package host computes it).
func Version(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:8])
}

// Connection is a stored connection blob (GAIA's layout).
type Connection struct {
	AccountEmail string   `json:"account_email"`
	ClientIDHash string   `json:"client_id_hash"`
	ConnectedAt  Seconds  `json:"connected_at"`
	RefreshToken string   `json:"refresh_token"`
	Scopes       []string `json:"scopes"`
	Tenant       *string  `json:"tenant,omitempty"`
	AccountType  *string  `json:"account_type,omitempty"`
}

// Seconds is a time in Unix milliseconds written as float seconds ("1790000000.123").
type Seconds int64

// MarshalJSON writes the seconds with three decimals.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%d.%03d", int64(s)/1000, int64(s)%1000)), nil
}

// UnmarshalJSON reads float seconds (digits after the third decimal are dropped).
func (s *Seconds) UnmarshalJSON(b []byte) error {
	txt := string(b)
	intPart, frac := txt, ""
	for i := range txt {
		if txt[i] == '.' {
			intPart, frac = txt[:i], txt[i+1:]
			break
		}
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return fmt.Errorf("layout: connected_at %s: %w", txt, err)
	}
	frac = (frac + "000")[:3]
	m, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return fmt.Errorf("layout: connected_at %s: %w", txt, err)
	}
	*s = Seconds(n*1000 + m)
	return nil
}

// Encode renders the blob as grantwire stores it (compact, keys sorted).
func (c Connection) Encode() string {
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	b, err := json.Marshal(c) // fields are declared in sorted order
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ParseConnection decodes a connection blob.
func ParseConnection(blob string) (Connection, error) {
	var c Connection
	err := json.Unmarshal([]byte(blob), &c)
	return c, err
}

// Client is a stored OAuth client.
type Client struct {
	ClientID     string  `json:"client_id"`
	ClientSecret string  `json:"client_secret"`
	Tenant       *string `json:"tenant,omitempty"`
}

// Encode renders the client as grantwire stores it.
func (c Client) Encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// AccessToken is a cached access token, bound to the connection it came from.
type AccessToken struct {
	AccessToken  string `json:"access_token"`
	ClientIDHash string `json:"client_id_hash"`
	ConnectedAt  int64  `json:"connected_at"`
	ExpiresAt    int64  `json:"expires_at"`
}

// ActivationsOf returns the "activations" member of an activations ledger ({} when there
// is none); ok is false when doc is not a JSON object — including an empty file, which a
// writer that truncates before writing leaves for a moment. What a shell's watcher of
// other processes' changes hands to the policy (activation_changes), which judges the
// entries.
func ActivationsOf(doc []byte) (json.RawMessage, bool) {
	var root struct {
		Activations json.RawMessage `json:"activations"`
	}
	if json.Unmarshal(doc, &root) != nil {
		return nil, false
	}
	if len(root.Activations) == 0 || string(root.Activations) == "null" {
		return json.RawMessage(`{}`), true
	}
	return root.Activations, true
}

// GrantsOf returns the grants ledger as it is ({connector: {agent: [scopes]}}); ok is
// false when doc is not a JSON object. What a shell's watcher hands to the policy
// (grant_changes), which judges the entries.
func GrantsOf(doc []byte) (json.RawMessage, bool) {
	var root map[string]json.RawMessage
	if json.Unmarshal(doc, &root) != nil || root == nil {
		return nil, false
	}
	return json.RawMessage(doc), true
}
