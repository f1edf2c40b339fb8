// Package regoengine evaluates grantwire's policy with OPA's Go evaluator (topdown) on the
// same Rego source that policy.wasm is compiled from. It is the reference oracle in the
// differential tests, and the engine for policy authors who edit Rego live.
//
// It is the only package of grantwire's runtime that imports OPA; programs that use only
// core/wasmengine do not link it.
package regoengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/policy"
)

type config struct {
	modules fs.FS
	data    []byte
}

// Option configures an [Engine].
type Option func(*config)

// WithModules evaluates the .rego files of fsys (tests excluded) instead of the embedded policy.
func WithModules(fsys fs.FS) Option { return func(c *config) { c.modules = fsys } }

// WithData sets the policy's data document (the catalog), as JSON.
func WithData(data []byte) Option { return func(c *config) { c.data = data } }

// Engine is the rego engine; it is safe for concurrent use.
type Engine struct {
	decide   rego.PreparedEvalQuery
	manifest *core.Manifest
}

// Modules reads the Rego modules of fsys, skipping tests, keyed by path.
func Modules(fsys fs.FS) (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = string(b)
		return nil
	})
	return out, err
}

// New prepares the decide and manifest queries once.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	c := config{modules: policy.Sources, data: []byte(`{}`)}
	for _, o := range opts {
		o(&c)
	}
	mods, err := Modules(c.modules)
	if err != nil {
		return nil, fmt.Errorf("regoengine: %w", err)
	}
	if len(mods) == 0 {
		return nil, errors.New("regoengine: no Rego modules")
	}
	var data map[string]any
	if err := util.UnmarshalJSON(c.data, &data); err != nil {
		return nil, fmt.Errorf("regoengine: data: %w", err)
	}
	caps, err := ast.LoadCapabilitiesJSON(bytes.NewReader(policy.Capabilities))
	if err != nil {
		return nil, fmt.Errorf("regoengine: capabilities: %w", err)
	}
	store := inmem.NewFromObject(data)
	base := []func(*rego.Rego){rego.Store(store), rego.Capabilities(caps), rego.StrictBuiltinErrors(false)}
	for p, src := range mods {
		base = append(base, rego.Module(p, src))
	}
	e := &Engine{}
	if e.decide, err = rego.New(append(base, rego.Query("data.grantwire.decide"))...).PrepareForEval(ctx); err != nil {
		return nil, fmt.Errorf("regoengine: %w", err)
	}
	mq, err := rego.New(append(base, rego.Query("data.grantwire.manifest"))...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("regoengine: %w", err)
	}
	rs, err := mq.Eval(ctx)
	if err != nil || len(rs) == 0 {
		return nil, fmt.Errorf("regoengine: manifest: %v", err)
	}
	raw, err := json.Marshal(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, err
	}
	if e.manifest, err = core.ParseManifest(raw); err != nil {
		return nil, fmt.Errorf("regoengine: manifest %s: %w", raw, err)
	}
	return e, nil
}

// DecideJSON evaluates a query given as JSON and appends the canonical decision to dst.
func (e *Engine) DecideJSON(ctx context.Context, dst, query []byte) ([]byte, error) {
	if err := core.CheckQuery(query); err != nil {
		return dst, err
	}
	input, err := ast.ValueFromReader(bytes.NewReader(query))
	if err != nil {
		return dst, fmt.Errorf("regoengine: malformed query: %w", err)
	}
	rs, err := e.decide.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return dst, fmt.Errorf("regoengine: %w", err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return dst, core.ErrUndefined
	}
	return jsonx.Append(dst, rs[0].Expressions[0].Value)
}

// Decide answers a typed query.
func (e *Engine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	return core.DecideTyped(ctx, e, q)
}

// Manifest returns what the policy publishes about its operations.
func (e *Engine) Manifest() *core.Manifest { return e.manifest }

// Name returns "rego".
func (e *Engine) Name() string { return "rego" }

// Close releases nothing; it exists for the Engine interface.
func (e *Engine) Close(context.Context) error { return nil }
