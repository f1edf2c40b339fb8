package mcp

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"

	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Remote MCP servers behind OAuth 2.1 (docs/behaviour.md#remote-mcp-servers): the policy
// decides everything (discovery, registration, scopes, issuer binding, the agent gate);
// these methods only run its operations. Package mcpremote puts them behind the MCP Go
// SDK's OAuthHandler and runs `grantwire mcp proxy`.

// RemoteServer is what AddServer records.
type RemoteServer struct {
	// ID names the server (the connector-id grammar; not a catalog id).
	ID string
	// URL is the server's streamable-HTTP endpoint (https; http only to loopback).
	URL string
	// Scopes are asked for when the server's challenge names none.
	Scopes []string
	// ClientID (and ClientSecret) of a client registered at the authorization server by
	// hand; Issuer names that authorization server ("" for whichever the server names).
	ClientID, ClientSecret, Issuer string
	// ClientMetadataURL is an https URL of a client ID metadata document describing
	// grantwire, used as the client id where the authorization server supports them.
	ClientMetadataURL string
	// Grant is how the server is authorized: "" or GrantAuthorizationCode (a person in the
	// browser), or a machine grant with no person (GrantClientCredentials, GrantJWTBearer,
	// GrantIDJAG), which needs ClientID.
	Grant Grant
	// PrivateKey is the client's private key (PEM, PKCS #8 or SEC 1 EC, or RSA): the client
	// then authenticates with a JWT it signs (private_key_jwt) instead of a secret.
	PrivateKey string
	// Assertion is the JWT bearer grant's assertion (GrantJWTBearer: the workload's JWT) or
	// the identity provider's ID token (GrantIDJAG). Kept in the credential store.
	Assertion string
	// IDPTokenEndpoint (and IDPClientID, the client at the identity provider) is where
	// GrantIDJAG exchanges the ID token for an ID-JAG (RFC 8693).
	IDPTokenEndpoint, IDPClientID string
}

// Grant names how a remote MCP server is authorized (docs/behaviour.md#machine-grants).
type Grant string

// The grants of RemoteServer.Grant.
const (
	GrantAuthorizationCode Grant = "authorization_code" // a person, in the browser (the default)
	GrantClientCredentials Grant = "client_credentials" // SEP-1046: the client's own credentials
	GrantJWTBearer         Grant = "jwt_bearer"         // SEP-1933, RFC 7523: a workload's JWT
	GrantIDJAG             Grant = "id_jag"             // SEP-990: an ID token exchanged for an ID-JAG
)

// AddResult is the outcome of AddServer.
type AddResult struct {
	Connector     string   `json:"connector"`
	URL           string   `json:"url"`
	Scopes        []string `json:"scopes"`
	Preregistered bool     `json:"preregistered"`
	// Grant is the grant the server is authorized with.
	Grant Grant `json:"grant"`
	// Reset: the URL changed, so the tokens and registration of the old one were deleted.
	Reset bool `json:"reset"`
}

// AddServer records a remote MCP server (mcp_remote.json; a client secret goes to the
// credential store).
func (c *Client) AddServer(ctx context.Context, s RemoteServer) (*AddResult, error) {
	args := map[string]any{"connector": s.ID, "url": s.URL, "scopes": jsonx.NonNil(s.Scopes)}
	for k, v := range map[string]string{
		"client_id": s.ClientID, "issuer": s.Issuer, "client_metadata_url": s.ClientMetadataURL,
		"grant": string(s.Grant), "idp_token_endpoint": s.IDPTokenEndpoint, "idp_client_id": s.IDPClientID,
	} {
		if v != "" {
			args[k] = v
		}
	}
	var secrets map[string]string
	for k, v := range map[string]string{"client_secret": s.ClientSecret, "private_key": s.PrivateKey, "assertion": s.Assertion} {
		if v != "" {
			if secrets == nil {
				secrets = map[string]string{}
			}
			secrets[k] = v
		}
	}
	var r AddResult
	_, err := c.r.Run(ctx, "mcp_add", args, secrets, &r)
	return &r, err
}

// AuthOptions tune Authorize.
type AuthOptions struct {
	// Scopes are asked for besides the server's configured ones.
	Scopes []string
	// WWWAuthenticate is the challenge the server answered with (401 or 403), when the
	// authorization answers one; without it the policy probes the server.
	WWWAuthenticate string
	// Status is the HTTP status that carried WWWAuthenticate (401 or 403). An authorization
	// with a status (a proxy's) that finds, under the server's authorization lock, a usable
	// token another process stored meanwhile uses it and authorizes nothing.
	Status int
	// Rejected is the Digest of the token the refused request carried ("": it carried none).
	Rejected string
	// StepUp counts the step-up authorizations already made in this session (the policy
	// bounds them).
	StepUp int
	// Timeout bounds the wait for the browser (default 5 minutes).
	Timeout time.Duration
	// Flow is how the user authorizes: FlowLoopback (the default) or FlowPaste (the URL is
	// opened anywhere and the final redirect address pasted back, as Connect's).
	Flow string
}

// AuthResult is the outcome of Authorize (never a secret).
type AuthResult struct {
	Connector    string   `json:"connector"`
	Issuer       string   `json:"issuer"`
	Resource     string   `json:"resource"`
	Scopes       []string `json:"scopes"`
	Requested    []string `json:"requested"`
	NotGranted   []string `json:"not_granted"`
	Registration string   `json:"registration"`
	RefreshToken bool     `json:"refresh_token"`
	// Grant is the grant the server was authorized with (GrantAuthorizationCode, or a
	// machine grant, which a refresh token is not needed for: mcp auth runs it again).
	Grant Grant `json:"grant"`
}

// Authorize authorizes a remote MCP server (discovery, registration, PKCE through the
// loopback, code exchange) and stores its tokens, bound to the authorization server's
// issuer.
func (c *Client) Authorize(ctx context.Context, server string, o AuthOptions) (*AuthResult, error) {
	args := map[string]any{"connector": server, "scopes": jsonx.NonNil(o.Scopes)}
	if o.WWWAuthenticate != "" {
		args["www_authenticate"] = base64.RawURLEncoding.EncodeToString([]byte(o.WWWAuthenticate))
	}
	if o.Status != 0 {
		args["status"] = o.Status
	}
	if o.Rejected != "" {
		args["rejected"] = o.Rejected
	}
	if o.StepUp > 0 {
		args["step_up"] = o.StepUp
	}
	if o.Timeout > 0 {
		args["timeout_ms"] = o.Timeout.Milliseconds()
	}
	if o.Flow != "" {
		args["flow"] = o.Flow
	}
	var r AuthResult
	_, err := c.r.Run(ctx, "mcp_auth", args, nil, &r)
	return &r, err
}

// Refusal is what a remote MCP session knows when the server refused a request with 401
// or 403: the policy decides what to do about it (Challenge).
type Refusal struct {
	// Status is the HTTP status of the refusal; WWWAuthenticate its challenge.
	Status          int
	WWWAuthenticate string
	// Sent is what the refused request carried: "none", "other" (a token the session did
	// not get from the policy), "current" (the token last handed out) or "fresh" (that
	// token, first handed out after the session's last authorization); Uses is how many
	// requests carried the fresh token.
	Sent string
	Uses int
	// Refreshed: a refresh was tried for this refusal and gave no new token.
	Refreshed bool
	// Authorizations and StepUps count the session's authorizations after a 401 and its
	// step-ups so far.
	Authorizations, StepUps int
}

// Answer is the policy's answer to a refused request: Action "refresh" (Token with
// the refused token's digest), "authorize" (Authorize with the challenge) or "step_up"
// (Authorize with the challenge and StepUp); Scopes are those the challenge names.
type Answer struct {
	Action string   `json:"action"`
	Scopes []string `json:"scopes"`
	StepUp int      `json:"step_up"`
}

// Challenge asks the policy what a remote MCP session does about a refused request
// (op mcp_challenge, a pure decision): refresh, authorize or step up, or an error when
// asking again would loop or not help.
func (c *Client) Challenge(ctx context.Context, server string, r Refusal) (*Answer, error) {
	args := map[string]any{"connector": server, "status": r.Status, "sent": r.Sent, "uses": r.Uses,
		"refreshed": r.Refreshed, "authorizations": r.Authorizations, "step_ups": r.StepUps}
	if r.WWWAuthenticate != "" {
		args["www_authenticate"] = base64.RawURLEncoding.EncodeToString([]byte(r.WWWAuthenticate))
	}
	var a Answer
	_, err := c.r.Run(ctx, "mcp_challenge", args, nil, &a)
	return &a, err
}

// Bearer is the bearer token of an agent's connection to a remote MCP server.
type Bearer struct {
	Connector   string
	AccessToken string
	// Digest identifies the token without revealing it (pass it back as rejected when the
	// server refuses the token).
	Digest    string
	ExpiresAt time.Time
	Scopes    []string
	Issuer    string
	Resource  string
	// TokenType is "DPoP" for a token bound to a DPoP key (RFC 9449), else "Bearer".
	TokenType string
	// DPoP is the key a DPoP-bound token is bound to (nil for a bearer token): every
	// request to the server carries `Authorization: DPoP <token>` and a fresh proof.
	DPoP *DPoPKey
}

// DPoPKey is the key of a DPoP-bound token (RFC 9449), read from the credential store by
// the policy: it signs proofs and never prints its private key.
type DPoPKey struct {
	private string
	// JWK is the public key; Thumbprint its RFC 7638 thumbprint (the token's cnf.jkt).
	JWK        map[string]any
	Thumbprint string
	// NonceRetries is how many times one request may be sent again with a server's nonce
	// (the policy's data.grantwire.dpop.max_nonce_retries).
	NonceRetries int
}

// NewDPoPKey is the DPoPKey of a PEM private key (ECDSA P-256) and its public JWK, sent
// again with a server's nonce at most nonceRetries times (mcp_token gives the stored key
// this way; a caller holding its own key may too).
func NewDPoPKey(privatePEM string, jwk map[string]any, nonceRetries int) *DPoPKey {
	return &DPoPKey{private: privatePEM, JWK: jwk, Thumbprint: host.JWKThumbprint(jwk), NonceRetries: nonceRetries}
}

// Proof signs a fresh DPoP proof for a request (method, URL: its query and fragment are
// dropped) carrying accessToken (its SHA-256 is the proof's ath; "" for none) and the
// server's nonce ("" for none), iat now, jti from crypto/rand.
func (k *DPoPKey) Proof(method, requestURL, accessToken, nonce string) (string, error) {
	u, err := url.Parse(requestURL)
	if err != nil {
		return "", fmt.Errorf("grantwire: DPoP proof for an unparsable URL")
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return host.DPoPProof(k.private, k.JWK, method, u.String(), accessToken, nonce, time.Now(), nil)
}

// String and GoString never show the private key (value receivers: a copy prints so too).
func (k DPoPKey) String() string   { return "DPoPKey(" + k.Thumbprint + ")" }
func (k DPoPKey) GoString() string { return k.String() }

// Token returns the bearer token for agent on a remote MCP server, after the gate
// (granted and active), refreshing under the server's lock when it is about to expire or
// is the one the server refused (rejected: the Digest of that token).
func (c *Client) Token(ctx context.Context, server, agent, rejected string) (*Bearer, error) {
	args := map[string]any{"connector": server, "agent": agent}
	if rejected != "" {
		args["rejected"] = rejected
	}
	var r struct {
		AccessToken hostabi.SecretRef `json:"access_token"`
		Digest      string            `json:"digest"`
		ExpiresAt   int64             `json:"expires_at"`
		Scopes      []string          `json:"scopes"`
		Issuer      string            `json:"issuer"`
		Resource    string            `json:"resource"`
		TokenType   string            `json:"token_type"`
		DPoPKey     hostabi.SecretRef `json:"dpop_key"`
		DPoPJWK     map[string]any    `json:"dpop_jwk"`
		DPoPRetries int               `json:"dpop_nonce_retries"`
	}
	out, err := c.r.Run(ctx, "mcp_token", args, nil, &r)
	if err != nil {
		return nil, err
	}
	tok, ok := out.Secret(r.AccessToken.Ref)
	if !ok {
		return nil, fmt.Errorf("grantwire: access token reference %q unresolved", r.AccessToken.Ref)
	}
	b := &Bearer{Connector: server, AccessToken: tok, Digest: r.Digest, ExpiresAt: time.UnixMilli(r.ExpiresAt),
		Scopes: r.Scopes, Issuer: r.Issuer, Resource: r.Resource, TokenType: r.TokenType}
	if r.TokenType == "DPoP" {
		key, ok := out.Secret(r.DPoPKey.Ref)
		if !ok || r.DPoPJWK == nil {
			return nil, fmt.Errorf("grantwire: DPoP key reference %q unresolved", r.DPoPKey.Ref)
		}
		b.DPoP = NewDPoPKey(key, r.DPoPJWK, r.DPoPRetries)
	}
	if b.TokenType == "" {
		b.TokenType = "Bearer"
	}
	return b, nil
}

// LogoutResult is the outcome of Logout.
type LogoutResult struct {
	Connector string `json:"connector"`
	HadTokens bool   `json:"had_tokens"`
	Revoked   bool   `json:"revoked"`
}

// Logout revokes a remote MCP server's refresh token at its authorization server (best
// effort) and deletes its tokens and registration.
func (c *Client) Logout(ctx context.Context, server string) (*LogoutResult, error) {
	var r LogoutResult
	_, err := c.r.Run(ctx, "mcp_logout", map[string]any{"connector": server}, nil, &r)
	return &r, err
}

// RemoveResult is the outcome of Remove.
type RemoveResult struct {
	Connector string `json:"connector"`
	HadTokens bool   `json:"had_tokens"`
	Revoked   bool   `json:"revoked"`
	// RevokedGrants are the agents whose grants were removed; Deactivated those it was
	// active for.
	RevokedGrants []string `json:"revoked_grants"`
	Deactivated   []string `json:"deactivated"`
}

// Remove removes a remote MCP server added with AddServer: its refresh token is
// revoked at the authorization server (best effort), its tokens, registration and
// pre-registered client are deleted, its entry leaves mcp_remote.json, and every grant and
// activation on it is removed. A catalog server cannot be removed (Logout it).
func (c *Client) Remove(ctx context.Context, server string) (*RemoveResult, error) {
	var r RemoveResult
	_, err := c.r.Run(ctx, "mcp_remove", map[string]any{"connector": server}, nil, &r)
	return &r, err
}

// RemoteServerInfo is one row of RemoteServers (never a secret).
type RemoteServerInfo struct {
	ID            string              `json:"id"`
	URL           string              `json:"url"`
	InCatalog     bool                `json:"in_catalog"`
	Scopes        []string            `json:"scopes"`
	Authorized    bool                `json:"authorized"`
	Issuer        *string             `json:"issuer"`
	GrantedScopes []string            `json:"granted_scopes"`
	AuthorizedAt  *int64              `json:"authorized_at"`
	Registration  *string             `json:"registration"`
	Grants        map[string][]string `json:"grants"`
	ActiveFor     []string            `json:"active_for"`
}

// RemoteServers lists the remote MCP servers, or with agent those it sees.
func (c *Client) RemoteServers(ctx context.Context, agent string) ([]RemoteServerInfo, error) {
	return listServers[RemoteServerInfo](ctx, c, "mcp_remote_list", agent)
}
