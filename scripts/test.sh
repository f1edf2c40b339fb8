#!/usr/bin/env bash
# Runs every test of grantwire.
set -euo pipefail
cd "$(dirname "$0")/.."
export GRANTWIRE_REQUIRE_NODE=1 # the foreign (Node) shell runs the corpus; a missing Node fails, never skips
go tool opa test --timeout 60s policy/grantwire
go test -count=1 ./...
