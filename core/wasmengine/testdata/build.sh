#!/usr/bin/env bash
# Rebuilds the test modules of core/wasmengine (testdata/NAME.wasm from testdata/NAME/*.rego)
# with the OPA pinned in go.mod, from the repository root so the embedded paths are stable.
set -euo pipefail
cd "$(dirname "$0")/../../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in floor minimal abort noentry hostbuiltin slow; do
	go tool opa build -t wasm -o "$tmp/$name.tar.gz" "core/wasmengine/testdata/$name"
	tar -xzf "$tmp/$name.tar.gz" -C "$tmp" policy.wasm 2>/dev/null || tar -xzf "$tmp/$name.tar.gz" -C "$tmp" /policy.wasm
	mv "$tmp/policy.wasm" "core/wasmengine/testdata/$name.wasm"
	echo "wrote core/wasmengine/testdata/$name.wasm ($(stat -c %s "core/wasmengine/testdata/$name.wasm") bytes)"
done
