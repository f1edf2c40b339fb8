package oprun

import (
	"context"
	"errors"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
	"github.com/grantwire/grantwire/shells/postgres"
)

// Choice is what a user chose for a client, as the grantwire command hands it to the
// root's one construction path (grantwire.Open takes the same through its options):
// catalog → engine → shell → store → client.
type Choice struct {
	// Engine names the engine: "" (grantwire.DefaultEngine), native, wasm,
	// opa-server=URL, or a key of Engines.
	Engine string
	// Engines are engines this build adds by name (the OPA build's rego), each built on
	// the catalog's data.
	Engines map[string]func(ctx context.Context, data []byte) (core.Engine, error)
	// CacheDir keeps the wasm engine's compiled code; "" interprets the module (one
	// command asks a handful of questions: interpreting starts faster than compiling).
	CacheDir string
	// Pool is how many wasm instances evaluate at once (0: GOMAXPROCS).
	Pool int
	// Catalog replaces the embedded catalog (a user's file: catalog.File).
	Catalog catalog.Source
	// Bundle runs the client on a bundle's policy.wasm, catalog and agents.
	Bundle *bundle.Bundle
	// StoreURL, when set, lays the PostgreSQL store (options Store) over the shell.
	StoreURL string
	Store    postgres.Options
	// DecisionLog receives every decision as a decision-log record.
	DecisionLog func(decisionlog.Record)
	// Shell are the OS shell's options, read when the client is built (a command settles
	// them after it read the catalog); the construction adds the policy's loopback rule
	// and the watchers that hand other processes' changes to the policy.
	Shell *native.Options
	// NewShell opens the shell (native.New when nil).
	NewShell func(native.Options) (Shell, error)
}

// Shell is what a client needs of an OS shell (*native.Shell satisfies it).
type Shell interface {
	Capabilities() hostabi.Capabilities
	Close() error
}

// Assembly builds a client step by step, each step once: its catalog (no shell), the
// engine on it, then the client (the shell, the store, the client). A client built takes
// over the engine; Close closes what was built.
type Assembly interface {
	Catalog() (*catalog.Catalog, error)
	Engine(ctx context.Context) (core.Engine, error)
	// Client returns the *grantwire.Client.
	Client(ctx context.Context) (any, error)
	Close(ctx context.Context) error
}

var assemble func(Choice) Assembly

// RegisterAssemble sets the root's construction path; the root package calls it once.
func RegisterAssemble(f func(Choice) Assembly) { assemble = f }

// Assemble starts the construction of a client on c (nothing is built yet).
func Assemble(c Choice) Assembly { return assemble(c) }

// HostlessFunc runs an operation on an engine alone (RunHostless).
type HostlessFunc func(ctx context.Context, engine core.Engine, cat *catalog.Catalog, op string, args, result any) error

var hostless HostlessFunc

// RegisterHostless sets how RunHostless runs an operation without a shell; the root
// package calls it once.
func RegisterHostless(h HostlessFunc) { hostless = h }

// ErrNeedsHost is RunHostless's error when the policy asked the host something (a need
// or an effect): nothing was read or written, the operation needs a client.
var ErrNeedsHost = errors.New("oprun: the operation needs the host")

// RunHostless runs op on engine alone, with cat as its catalog and no shell, and decodes
// its result into result (when not nil): for a question the policy answers from its
// arguments and the catalog (configure's form of a catalog connector), asked after the
// assembly's engine and before its client (the shell, the store). When the policy asks
// the host anything, it stops with ErrNeedsHost; a policy error is a *grantwire.Error.
func RunHostless(ctx context.Context, engine core.Engine, cat *catalog.Catalog, op string, args, result any) error {
	return hostless(ctx, engine, cat, op, args, result)
}
