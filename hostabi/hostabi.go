// Package hostabi is the contract between grantwire's core and a shell (ABI
// "grantwire.host.v2"): the need and effect kinds (kinds.go, each a primitive a host performs
// without judgement), the capabilities a Go shell supplies (a keyring, the home's JSON files,
// locks, HTTP, the loopback redirect, the device prompt, clock, entropy, environment,
// events), the JSON
// Schemas of the language-neutral form (schema/, described in README.md), and the generic
// [Driver] loop.
//
// The Go implementation of the needs and effects over these capabilities is package host;
// internal/testworld/memhost supplies the capabilities in memory for deterministic runs.
//
// This package imports core only; hosts and shells import it, never the reverse.
package hostabi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/grantwire/grantwire/core"
)

// ModuleName names this ABI in transcripts and foreign hosts.
const ModuleName = "grantwire.host.v2"

// DefaultService is the keyring service grantwire uses unless told otherwise.
const DefaultService = "grantwire.connections"

// Sentinel errors of capabilities. Implementations wrap them; callers use errors.Is.
var (
	// ErrNotFound: the keyring holds no value for the service and user.
	ErrNotFound = errors.New("hostabi: not found")
	// ErrBusy: a lock is held by someone else past the deadline.
	ErrBusy = errors.New("hostabi: busy")
	// ErrConflict: a precondition of an effect did not hold.
	ErrConflict = errors.New("hostabi: conflict")
)

// HostError is a failure of the host itself (no credential store, an unreadable file),
// reported to the core as {"host_error": {code, detail, fix}}: the core turns it into the
// operation's error. Detail and Fix must not contain a secret.
type HostError struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func (e *HostError) Error() string { return e.Detail }

// Reasons a host will not read a file as a ledger (FileRefused): part of the fixed
// vocabulary of ledger.read's corrupt answer (README.md).
const (
	RefusedSymlink    = "a symbolic link"
	RefusedBrokenLink = "a symbolic link to no regular file"
	RefusedNotRegular = "not a regular file"
	RefusedTooLarge   = "larger than 16 MiB"
)

// FileRefused is a file a host will not read as a ledger (a symbolic link, a FIFO or
// device, a file over the size cap). The host answers ledger.read with corrupt: Reason,
// the policy says what to do, and the file is left as it is.
type FileRefused struct {
	Path   string
	Reason string // one of the Refused… reasons
}

func (e *FileRefused) Error() string { return e.Path + " is " + e.Reason }

// Keyring stores secrets in the OS credential store. Every method is bounded by ctx.
//
//   - Get returns an error wrapping ErrNotFound when nothing is stored.
//   - Delete of an absent value returns nil (idempotent).
//   - A missing or insecure store returns a *HostError with code INSECURE_STORE naming what
//     to install; implementations never fall back to a file.
type Keyring interface {
	Get(ctx context.Context, service, user string) (string, error)
	Set(ctx context.Context, service, user, value string) error
	Delete(ctx context.Context, service, user string) error
}

// Files reads and atomically rewrites JSON files under the home (the ledgers), and hashes
// any regular file.
//
//   - Read returns the bytes (nil when the file does not exist) and a version token that
//     changes whenever the content does ("" when absent).
//   - Update holds the file's cross-process lock while fn turns the current bytes into
//     new ones, then writes them atomically (temp file, fsync, rename, fsync the
//     directory; 0600 file in 0700 directories). fn returning an error writes nothing.
//   - Path names the file for messages.
//   - Digest returns the SHA-256 (hex) of a regular file of at most max bytes ("~/" is the
//     user's home); anything else is an error saying why.
type Files interface {
	Read(ctx context.Context, name string) (doc []byte, version string, err error)
	Update(ctx context.Context, name string, fn func(doc []byte, version string) ([]byte, error)) error
	Path(name string) string
	Digest(ctx context.Context, path string, max int64) (string, error)
}

// Locks provides named locks shared by every process of the user that uses the same
// credential-store service. Within one process, callers queue for the same lock.
//
// TryLock waits at most wait, then returns an error wrapping ErrBusy. The returned
// function releases the lock; it is safe to call once.
type Locks interface {
	TryLock(ctx context.Context, name string, wait time.Duration) (release func(), err error)
}

// Clock tells the time. Test worlds use a simulated clock.
type Clock interface {
	Now() time.Time
}

// Sleeper is implemented by a Clock that waits itself (clock.sleep): a simulated clock
// advances instead of waiting. For any other Clock package host waits on a real timer.
// Sleep returns ctx's error when the caller cancels.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
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

// Loopback runs the user's part of a browser authorization.
type Loopback interface {
	// Open starts a one-shot listener on 127.0.0.1 for one operation authorizing connector,
	// in a mode: ModeListen (the browser comes back to the listener) or ModePaste (the user
	// pastes the final redirect URL back; the listener may serve as well). It returns an
	// error wrapping ErrUnavailable when no user can complete the authorization that way
	// here.
	Open(ctx context.Context, connector, mode string) (Callback, error)
}

// Authorization is what Callback.Wait shows to the user and checks.
type Authorization struct {
	// URL is the authorization URL to open; State the state its answer must carry.
	URL, State string
	// Connector names the provider (for what the user reads).
	Connector string
	// Alternative, when set, is the command of another way to complete (the policy's),
	// worth showing when no browser could be opened.
	Alternative string
	// Timeout bounds the wait.
	Timeout time.Duration
}

// ErrUnavailable: the loopback cannot be used in this session (no browser, no terminal).
var ErrUnavailable = errors.New("hostabi: no way to complete a browser authorization here")

// Callback is an open loopback listener.
type Callback interface {
	// RedirectURI is "http://127.0.0.1:<port>/callback".
	RedirectURI() string
	// Wait shows a.URL to the user (opening a browser where it can) and waits for a
	// callback whose state parameter equals a.State, compared in constant time; other
	// callbacks are refused with a static page and the wait goes on. In paste mode a pasted
	// redirect URL counts as the callback when it is the redirect URI exactly (scheme,
	// host, port, path) with that state; anything else pasted is refused without being
	// echoed and the wait goes on. It returns the callback's query parameters, or an error
	// wrapping context.DeadlineExceeded (timeout), ErrUnavailable (nobody can answer any
	// more: the paste input ended) or context.Canceled.
	Wait(ctx context.Context, a Authorization) (map[string]string, error)
	// Close stops the listener.
	Close() error
}

// DevicePrompt is what a user needs to authorize a connector on another device (RFC 8628
// §3.3): where to go and the code to enter there. It holds no secret (the device code
// never leaves the host's memory of the operation).
type DevicePrompt struct {
	Connector       string `json:"connector"`
	VerificationURI string `json:"verification_uri"`
	// VerificationURIComplete is the URI with the code in it ("" when the provider gave none).
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	UserCode                string `json:"user_code"`
	// ExpiresIn is how long the code can still be used (the policy's window).
	ExpiresIn time.Duration `json:"-"`
	// Interval is how often the token endpoint is polled at first (the provider's
	// interval; slow_down answers lengthen it later). Zero when the need did not say.
	Interval time.Duration `json:"-"`
}

// Prompter shows a device prompt to the user (prompt.show). Show must not wait for the
// user; it returns an error wrapping ErrUnavailable when nobody can see the prompt.
type Prompter interface {
	Show(ctx context.Context, p DevicePrompt) error
}

// PrompterFunc adapts a function to Prompter.
type PrompterFunc func(ctx context.Context, p DevicePrompt) error

// Show implements Prompter.
func (f PrompterFunc) Show(ctx context.Context, p DevicePrompt) error { return f(ctx, p) }

type prompterKey struct{}

// WithPrompter returns a context whose operations show device prompts with p instead of
// the shell's Prompt capability: the caller of one operation receives its code (a web
// server hands it to the page that asked).
func WithPrompter(ctx context.Context, p Prompter) context.Context {
	return context.WithValue(ctx, prompterKey{}, p)
}

// PrompterFrom returns the Prompter of WithPrompter, or nil.
func PrompterFrom(ctx context.Context) Prompter {
	p, _ := ctx.Value(prompterKey{}).(Prompter)
	return p
}

// Capabilities is everything a Go shell supplies. package host turns them into needs and
// effects.
type Capabilities struct {
	Keyring  Keyring
	Files    Files
	Locks    Locks
	Clock    Clock
	Entropy  Entropy
	Events   Events
	Loopback Loopback
	// Prompt shows device codes (nil: nobody can be shown one).
	Prompt Prompter
	// HTTP sends requests; it must not follow redirects (package host never asks it to).
	HTTP http.RoundTripper
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Service is the keyring service name (default DefaultService; a GAIA installation uses
	// "gaia.connections").
	Service string
}

// Performer answers needs and applies effects for one operation; package host implements
// it over [Capabilities], and the [Driver] uses it without knowing any kind.
type Performer interface {
	// Fetch answers one need. Host failures are answered as {"host_error": ...} facts;
	// an error is a bug or the caller's cancellation.
	Fetch(ctx context.Context, n core.Need) (json.RawMessage, error)
	// Apply applies effects in order, undoing a transaction's earlier effects when one of
	// them fails. A failed precondition returns an error wrapping ErrConflict; a host
	// failure returns a *HostError.
	Apply(ctx context.Context, effects []core.Effect) error
	// Describe registers a secret argument of the operation ("arg#<name>") and returns its
	// description.
	Describe(ref, value string) json.RawMessage
	// Secret resolves a reference registered during the operation.
	Secret(ref string) (string, bool)
	// End releases what the operation still holds (locks, a loopback listener).
	End()
}

// TokenFetcher is implemented by a Performer that can name a fact by a token (resident
// facts, core.Query.Tokens): FetchToken answers like Fetch and returns, besides, a token
// that names these exact bytes for as long as the process runs ("" when the fact has
// none). A token is never reused for other bytes, and never names a host failure (a
// {"host_error": ...} fact has none: the Driver looks for failures only in facts without
// a token, so a large resident fact is not scanned again). The Driver passes the tokens on to the
// engine, which may keep the parsed fact between operations. Optional: a Performer
// without it is asked Fetch, and its facts are parsed with every query.
type TokenFetcher interface {
	FetchToken(ctx context.Context, n core.Need) (fact json.RawMessage, token string, err error)
}

// Host starts operations.
type Host interface {
	Begin(op string) Performer
}

// browserKey carries an operation's own way of showing an authorization URL.
type browserKey struct{}

// WithBrowser returns a context whose operation shows the authorization URL of its
// loopback.wait with show instead of the shell's browser: a server hands the URL to the
// page that asked for the authorization (a call per operation, where the shell's browser is
// one per process). show returns an error when it could not show the URL; a shell then
// behaves as without a browser. Shells that honour it: shells/native.
func WithBrowser(ctx context.Context, show func(url string) error) context.Context {
	return context.WithValue(ctx, browserKey{}, show)
}

// BrowserFrom returns the function given with WithBrowser, or nil.
func BrowserFrom(ctx context.Context) func(url string) error {
	f, _ := ctx.Value(browserKey{}).(func(url string) error)
	return f
}
