#!/usr/bin/env bash
# Installs what grantwire's build and tests need, or says clearly what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "deps: Go 1.26 or later is required (https://go.dev/dl/)" >&2; exit 1; }
go mod download
go tool opa version >/dev/null
