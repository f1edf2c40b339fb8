package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
)

// Shell is a shell × engine pair under test. The runner builds one [World] per scenario,
// stages the scenario's initial world through the world's real capabilities (keyring and
// ledgers are written exactly as another grantwire or GAIA process would write them), and
// inspects the final world through the same capabilities.
//
// memshell implements it on internal/testworld/memhost; the OS shell implements it on a private
// keyring service, a temporary home and real file locks.
type Shell interface {
	// Name names the pair in test output ("memhost/wasm").
	Name() string
	// Engine returns an engine deciding with the given policy data ({"catalog": ...}). A
	// shell may cache engines by data; the runner never closes them.
	Engine(ctx context.Context, data []byte) (core.Engine, error)
	// NewWorld returns an empty world whose clock reads setup.Start. The runner closes it.
	NewWorld(ctx context.Context, t testing.TB, setup Setup) (World, error)
}

// Setup is what a world needs before staging.
type Setup struct {
	Start   time.Time
	Catalog *catalog.Catalog
	// Engine is the scenario's engine (from Shell.Engine), for a shell whose capabilities
	// consult the core themselves (the OS shell's transport rule).
	Engine core.Engine
}

// World is one scenario's world. Everything a process reads or writes goes through
// Capabilities (the runner stages keyring slots and files, agents.json included, through
// them); the other methods are what no capability can do: other processes holding locks,
// the passage of time, the environment, the authorization server's script, injected
// keyring failures, and the event log.
type World interface {
	// Capabilities returns the capabilities of a process of this world (every process
	// sees the same keyring, ledgers, locks, clock and token server).
	Capabilities() hostabi.Capabilities
	// Advance moves the world's clock.
	Advance(d time.Duration)
	// Setenv sets an environment variable of the processes.
	Setenv(key, value string)
	// Hold makes another process hold a lock; Release frees it.
	Hold(lock, holder string) error
	Release(lock string) error
	// FailKeyring makes the next count keyring operations op ("get", "set", "delete") on
	// user fail: with a plain error, or (insecure) as a missing or insecure credential store
	// does, with a *hostabi.HostError of code INSECURE_STORE.
	FailKeyring(op, user string, count int, insecure bool) error
	// TokenServer is the world's scripted authorization server.
	TokenServer() TokenServer
	// Events returns every event emitted so far, in order.
	Events() []hostabi.Event
	// Close releases the world's resources.
	Close() error
}

// TokenServer is a scripted authorization server (see [TokenServerSpec] for its default
// behaviour and token names).
type TokenServer interface {
	// Configure sets rotation and the lifetime of issued access tokens (seconds).
	Configure(rotate bool, expiresIn int64)
	// Issue makes a refresh token valid for a provider, as a past authorization would.
	Issue(provider, refreshToken string)
	// ScriptRefresh queues the answer to the provider's next refresh. during, when not nil,
	// runs while that request is in flight (another process acting meanwhile).
	ScriptRefresh(provider string, r TokenResponse, during func())
	// ScriptAuthorize queues the outcome of the provider's next authorization.
	ScriptAuthorize(provider string, r AuthorizeResult)
	// Requests is the number of refresh requests received.
	Requests() int
	// Exchanges is the number of authorization-code requests received.
	Exchanges() int
	// Revocations is the number of revocation requests received; Revoked the number of
	// refresh tokens revoked.
	Revocations() int
	Revoked() int
	// ClientAuth is how every token-endpoint request authenticated the client, in order
	// (client_secret_basic, client_secret_post, none or mixed).
	ClientAuth() []string
	// RequireClientAuth makes the provider's endpoints require a client authentication
	// method ("" for RFC 8414's default), and a secret when secretRequired.
	RequireClientAuth(provider, method string, secretRequired bool)
	// ScriptRevoke queues the answer to the provider's next revocation request.
	ScriptRevoke(provider string, r TokenResponse)
}

// KeyringLister is optionally implemented by a World that can list its whole keyring; the
// runner then also checks that no entry exists beyond those it knows of.
type KeyringLister interface {
	KeyringUsers(service string) []string
}

// Processes is optionally implemented by a World whose processes are separate instances
// of the shell (the OS shell: one native.Shell per process on the same home, keyring and
// lock files). The runner then builds each named process ("A", "B", ...) on
// ProcessCapabilities(name), asked once per process; Capabilities() stays the view of
// everything else (staging, world actions, inspection). Without it every process shares
// Capabilities() (with its own host, so its own memory of keyring slots).
type Processes interface {
	ProcessCapabilities(name string) (hostabi.Capabilities, error)
}

// Surface is something a person or another program can see: a file, the keyring's
// non-secret attributes, what was printed.
type Surface struct {
	Name string
	Text string
}

// Surfaces is optionally implemented by a World that can show more places a secret must
// never reach than the runner sees itself (results, errors, events, ledgers, host-call
// transcripts): every file under its home, the credential store's labels and attributes,
// prompts. The runner reads them after the last step and checks each for every secret of
// the scenario.
type Surfaces interface {
	Surfaces() ([]Surface, error)
}
