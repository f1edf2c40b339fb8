// Package hostabi is the contract between grantwire's core and a shell: the capabilities a
// shell supplies (keyring, ledgers, locks, OAuth over HTTP and the loopback, clock,
// entropy, events, the agent registry), the [Host] that answers the core's needs and
// applies its effects through them, and the generic [Driver] loop.
//
// The language-neutral form of the same contract (JSON Schemas of queries, decisions,
// facts and effects, with prose a JavaScript or Python host can implement from) is in
// hostabi/README.md and hostabi/schema/.
//
// # Capabilities
//
// | capability | interface  | what the shell supplies                                              |
// |------------|------------|----------------------------------------------------------------------|
// | keyring    | [Keyring]  | get / set / delete secrets in the OS credential store                |
// | ledger     | [Ledgers]  | read a ledger file with a version token; conditional atomic write    |
// | locks      | [Locks]    | a per-provider lock shared by every process of the user, with wait   |
// | oauth      | [OAuth]    | token refresh and the PKCE loopback authorization (HTTP checked by the core's transport rule) |
// | clock      | [Clock]    | now                                                                  |
// | entropy    | [Entropy]  | random bytes (PKCE verifier, state)                                  |
// | events     | [Events]   | emit connector.* events to subscribers                               |
// | agents     | [Agents]   | agent declarations (required connectors, MCP consumption)            |
//
// This package imports core only; shells import it, never the reverse.
package hostabi

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/grantwire/grantwire/core"
)

// ModuleName names this ABI in transcripts and foreign hosts.
const ModuleName = "grantwire.host.v1"

// Sentinel errors of capabilities. Implementations wrap them; callers use errors.Is.
var (
	// ErrNotFound: the keyring holds no value for the service and user.
	ErrNotFound = errors.New("hostabi: not found")
	// ErrBusy: a lock is held by someone else past the deadline.
	ErrBusy = errors.New("hostabi: busy")
	// ErrConflict: a conditional write found another version than the one it expected.
	ErrConflict = errors.New("hostabi: conflict")
)

// Keyring stores secrets in the OS credential store. Every method is bounded by ctx.
//
// # Errors
//
//   - Get returns an error wrapping ErrNotFound when nothing is stored.
//   - Delete of an absent value returns nil (idempotent).
//   - A missing or insecure store returns a *core.Error with code INSECURE_STORE naming
//     what to install; implementations never fall back to a file.
//
// See https://specifications.freedesktop.org/secret-service/ (Linux), Keychain Services
// (macOS) and Credential Manager (Windows).
type Keyring interface {
	Get(ctx context.Context, service, user string) (string, error)
	Set(ctx context.Context, service, user, value string) error
	Delete(ctx context.Context, service, user string) error
}

// Ledgers reads and writes grantwire's JSON ledgers ("grants", "activations", "state",
// "mcp_servers") as whole documents with version tokens.
//
// # Parameters
//
//   - name: the logical ledger; the shell maps it to a file (connectors/grants.json, ...).
//   - Read returns the raw document (nil when the file does not exist) and its version
//     ("" when absent). A version is any token that changes whenever the content does.
//   - Write replaces the document atomically (temp file in the same directory, fsync,
//     rename, fsync the directory; 0600 file in a 0700 directory) only if the current
//     version is still ifVersion, else it returns an error wrapping ErrConflict.
//
// Write must be atomic across processes: two writers with the same ifVersion never both
// succeed.
type Ledgers interface {
	Read(ctx context.Context, name string) (doc []byte, version string, err error)
	Write(ctx context.Context, name string, doc []byte, ifVersion string) error
	// Path names the ledger's file for error messages ("~/.grantwire/connectors/grants.json").
	Path(name string) string
}

// Locks provides per-provider locks shared by every process of the user. Within one
// process, callers queue for the same lock, which is how concurrent refreshes of one
// provider share a single token request.
//
// TryLock waits at most wait, then returns an error wrapping ErrBusy. The returned
// function releases the lock; it is safe to call once.
type Locks interface {
	TryLock(ctx context.Context, name string, wait time.Duration) (release func(), err error)
}

// Clock tells the time. Shells in test mode use a simulated clock.
type Clock interface {
	Now() time.Time
}

// Entropy supplies random bytes (crypto quality in real shells, seeded in tests).
type Entropy interface {
	Read(p []byte) (int, error)
}

// Event is one connector.* event.
type Event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// Events delivers events to subscribers. Emit must not block on slow subscribers.
type Events interface {
	Emit(e Event)
}

// Agent is an agent's declaration in the agent registry.
type Agent struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name,omitempty"`
	RequiredConnectors map[string][]string `json:"required_connectors,omitempty"` // connector → scopes
	Reasons            map[string]string   `json:"reasons,omitempty"`             // connector → why
	ConsumesMCPServers bool                `json:"consumes_mcp_servers,omitempty"`
}

// Agents is the agent registry.
type Agents interface {
	// Agent returns the declaration, or ok false for an unknown agent.
	Agent(ctx context.Context, id string) (a Agent, ok bool, err error)
}

// Client is an OAuth client configuration, as the OAuth capability needs it.
type Client struct {
	ID     string
	Secret string
	Tenant string
}

// TokenResponse is the outcome of a token request (refresh or code exchange).
//
// Status is the HTTP status (0 when the request never completed); Error is the OAuth
// error code of a failed response (RFC 6749 §5.2) or a short description of a transport
// failure. Secrets are only in AccessToken and RefreshToken.
type TokenResponse struct {
	Status       int
	Error        string
	AccessToken  string
	RefreshToken string // empty when the provider did not rotate or issue one
	ExpiresIn    int64  // seconds; 0 when the provider gave none
	Scopes       []string
	Account      string
}

// AuthStatus values of an authorization.
const (
	AuthOK                  = "ok"
	AuthDenied              = "denied"
	AuthInteractiveRequired = "interactive_required"
	AuthError               = "error"
)

// AuthResult is the outcome of an interactive authorization.
type AuthResult struct {
	Status string // AuthOK, AuthDenied, AuthInteractiveRequired or AuthError
	Token  TokenResponse
}

// Connector is the part of a catalog entry the OAuth capability needs.
type Connector struct {
	ID                 string            `json:"id"`
	Type               string            `json:"type"`
	AuthorizationURL   string            `json:"authorization_url,omitempty"`
	TokenURL           string            `json:"token_url,omitempty"`
	UserinfoURL        string            `json:"userinfo_url,omitempty"`
	AuthParams         map[string]string `json:"auth_params,omitempty"`
	ClientIDEnv        string            `json:"client_id_env,omitempty"`
	ClientSecretEnv    string            `json:"client_secret_env,omitempty"`
	Tenant             string            `json:"tenant,omitempty"`
	Command            string            `json:"command,omitempty"`
	Args               []string          `json:"args,omitempty"`
	ClientSecretNeeded bool              `json:"client_secret_required,omitempty"`
	// ScopeSeparator joins scopes in the authorization request ("" means a space, RFC 6749
	// §3.3; Linear wants ","). Authorization and token URLs may hold "{tenant}", replaced
	// by the client's tenant (see catalog.ExpandTenant).
	ScopeSeparator string `json:"scope_separator,omitempty"`
}

// OAuth performs the provider's token requests and the interactive PKCE authorization.
// Every URL and redirect hop is checked with the core's transport rule (op check_url)
// before a request goes out.
type OAuth interface {
	// Refresh exchanges a refresh token (RFC 6749 §6).
	Refresh(ctx context.Context, c Connector, client Client, refreshToken string) TokenResponse
	// Authorize runs the PKCE authorization (RFC 7636, RFC 8252 loopback redirect) and
	// exchanges the code.
	Authorize(ctx context.Context, c Connector, client Client, scopes []string) AuthResult
}

// Capabilities is everything a Go shell supplies. NewHost turns it into a [Host].
type Capabilities struct {
	Keyring Keyring
	Ledgers Ledgers
	Locks   Locks
	Clock   Clock
	Entropy Entropy
	Events  Events
	Agents  Agents
	OAuth   OAuth
	// Catalog returns a connector's catalog entry (ok false when unknown).
	Catalog func(id string) (Connector, bool)
	// Getenv reads an environment variable (client ids may come from the environment).
	Getenv func(string) string
	// Service is the keyring service name (default "grantwire.connections"; a GAIA
	// installation uses "gaia.connections").
	Service string
}

// DefaultService is the keyring service grantwire uses unless told otherwise.
const DefaultService = "grantwire.connections"

// Errorf builds a host-side *core.Error (INSECURE_STORE, CORRUPT_LEDGER, ...).
func Errorf(code, fix, message string) *core.Error {
	msg := message
	if fix != "" {
		msg += "; fix: " + fix
	}
	return &core.Error{Code: code, Message: msg, Fix: fix}
}
