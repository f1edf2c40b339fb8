#!/usr/bin/env bash
# Runs every test of grantwire.
set -euo pipefail
cd "$(dirname "$0")/.."
go tool opa test policy/grantwire
go test -count=1 ./...
# The Wasm engine's pool under the race detector (16 goroutines on 3 instances, aborts).
go test -race -count=1 -run 'TestConcurrent|TestAbort' ./core/wasmengine
