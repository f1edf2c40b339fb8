//go:build opa

package main

import (
	"context"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/regoengine"
)

// The OPA build adds the rego engine: the policy's Rego on OPA's evaluator (the oracle).
func init() {
	engines["rego"] = func(ctx context.Context, data []byte) (core.Engine, error) {
		return regoengine.New(ctx, regoengine.WithData(data))
	}
}
