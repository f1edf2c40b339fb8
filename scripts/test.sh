#!/usr/bin/env bash
# Runs every test of grantwire.
set -euo pipefail
cd "$(dirname "$0")/.."
go tool opa test --timeout 60s policy/grantwire
go test -count=1 ./...
