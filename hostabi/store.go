package hostabi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
)

// Keyring layout, shared with GAIA's gaia.connections (so grantwire can run on a GAIA
// installation's home and service):
//
//   - "<provider>:default": the connection blob, JSON {account_email, client_id_hash,
//     connected_at (float seconds), refresh_token, scopes, tenant?, account_type?};
//   - "provider:<provider>": the OAuth client, JSON {client_id, client_secret, tenant?};
//   - "<connector>:<ENV_KEY>": one environment value of an MCP server, raw.

// ConnectionUser is the keyring user of a provider's connection blob.
func ConnectionUser(provider string) string { return provider + ":default" }

// ClientUser is the keyring user of a provider's OAuth client.
func ClientUser(provider string) string { return "provider:" + provider }

// MCPUser is the keyring user of one environment value of an MCP server.
func MCPUser(connector, key string) string { return connector + ":" + key }

// ClientIDHash is the CRC-32 of a client id as 8 lowercase hex digits (GAIA's
// client_id_hash). It is a tripwire, not a secret and not a cryptographic hash.
func ClientIDHash(clientID string) string {
	return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(clientID)))
}

// Digest refers to a secret without revealing it: "sha256:" and 16 hex digits.
func Digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// Version is the version token of a stored blob.
func Version(blob string) string {
	sum := sha256.Sum256([]byte(blob))
	return hex.EncodeToString(sum[:8])
}

// connectionBlob is a stored connection.
type connectionBlob struct {
	AccountEmail string   `json:"account_email"`
	ClientIDHash string   `json:"client_id_hash"`
	ConnectedAt  float64  `json:"connected_at"`
	RefreshToken string   `json:"refresh_token"`
	Scopes       []string `json:"scopes"`
	Tenant       *string  `json:"tenant,omitempty"`
	AccountType  *string  `json:"account_type,omitempty"`
}

// parseConnection decodes a blob; ok is false when it is not a valid connection.
func parseConnection(blob string) (c connectionBlob, ok bool) {
	var raw map[string]json.RawMessage
	if json.Unmarshal([]byte(blob), &raw) != nil {
		return c, false
	}
	if json.Unmarshal([]byte(blob), &c) != nil || c.RefreshToken == "" || raw["scopes"] == nil {
		return c, false
	}
	return c, true
}

func (c connectionBlob) connectedAtMS() int64 { return int64(math.Round(c.ConnectedAt * 1000)) }

// fact renders the connection for the core: metadata and a digest, never the token.
func (c connectionBlob) fact(blob string) map[string]any {
	return map[string]any{
		"found": true, "valid": true,
		"account":        c.AccountEmail,
		"scopes":         nonNil(c.Scopes),
		"connected_at":   c.connectedAtMS(),
		"client_id_hash": c.ClientIDHash,
		"tenant":         strOrNil(c.Tenant),
		"account_type":   strOrNil(c.AccountType),
		"refresh":        Digest(c.RefreshToken),
		"version":        Version(blob),
	}
}

func (c connectionBlob) encode() string {
	b, err := json.Marshal(c) // struct fields in declaration order, which is sorted
	if err != nil {
		panic(err)
	}
	return string(b)
}

// stateEntry is the non-secret mirror of a connection in connectors/state.json.
func (c connectionBlob) stateEntry() map[string]any {
	return map[string]any{
		"configured":     true,
		"account":        c.AccountEmail,
		"scopes":         nonNil(c.Scopes),
		"connected_at":   c.connectedAtMS(),
		"client_id_hash": c.ClientIDHash,
		"tenant":         strOrNil(c.Tenant),
	}
}

// clientBlob is a stored OAuth client.
type clientBlob struct {
	ClientID     string  `json:"client_id"`
	ClientSecret string  `json:"client_secret"`
	Tenant       *string `json:"tenant,omitempty"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// envName is the conventional environment variable for a provider's client id or secret.
func envName(provider, what string) string {
	up := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(provider))
	return "GRANTWIRE_" + up + "_" + what
}
