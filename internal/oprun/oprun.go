// Package oprun is the plumbing grantwire's own packages share: running any policy
// operation by name on a *grantwire.Client. The root package keeps its public API to the
// typed methods; it registers here (at init) how to reach a client's runner, and the
// packages that need a raw operation (package mcp, the surfaces, the command, the test
// worlds) ask Of for it. It is internal: no program outside the module sees it.
package oprun

import (
	"context"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi"
)

// Runner runs a client's operations.
type Runner interface {
	// Do runs any operation by name and returns its raw result (which may hold secret
	// references resolved by Outcome.Secret); a policy error is a *grantwire.Error.
	Do(ctx context.Context, op string, args any, secrets map[string]string) (*hostabi.Outcome, error)
	// Run is Do that also decodes the result into result (when not nil).
	Run(ctx context.Context, op string, args any, secrets map[string]string, result any) (*hostabi.Outcome, error)
	// AsError converts an operation's core error to a *grantwire.Error (nil stays a nil
	// error).
	AsError(ce *core.Error) error
	// Catalog is the client's catalog.
	Catalog() *catalog.Catalog
}

var (
	of       func(client any) Runner
	validate func(ctx context.Context, engine core.Engine, cat *catalog.Catalog) error
)

// Register sets how Of reaches a client's runner and how ValidateCatalog judges a
// catalog; the root package calls it once.
func Register(f func(client any) Runner, v func(ctx context.Context, engine core.Engine, cat *catalog.Catalog) error) {
	of, validate = f, v
}

// ValidateCatalog has the policy judge a catalog (operation validate_catalog, strict for a
// catalog read from a file), as grantwire.New does, for callers that only read the catalog
// (`grantwire catalog validate`). It needs no shell: the decision asks the host nothing.
func ValidateCatalog(ctx context.Context, engine core.Engine, cat *catalog.Catalog) error {
	return validate(ctx, engine, cat)
}

// Of returns client's runner; client is a *grantwire.Client.
func Of(client any) Runner { return of(client) }
