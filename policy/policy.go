// Package policy embeds grantwire's decision logic: the Rego modules under grantwire/ (the
// single source of truth, with their tests), the policy.wasm that OPA compiles from them,
// and the capabilities file that keeps them pure (only builtins that run inside the Wasm
// module: no clock, randomness, network or host calls).
//
// This package imports nothing; both engines and the bundle builder read it.
package policy

import "embed"

// Wasm is policy.wasm, compiled from Sources by `make wasm` (see WasmSHA256).
//
//go:embed policy.wasm
var Wasm []byte

// WasmSHA256 is the committed sha256 of policy.wasm, as `sha256sum` prints it.
//
//go:embed policy.wasm.sha256
var WasmSHA256 string

// Sources holds the Rego modules (tests included; loaders skip *_test.rego for decisions).
//
//go:embed grantwire
var Sources embed.FS

// Capabilities is the OPA capabilities file the policy is checked and compiled against.
//
//go:embed capabilities.json
var Capabilities []byte

// Entrypoints are the rules compiled into policy.wasm.
var Entrypoints = []string{"grantwire/decide", "grantwire/manifest"}
