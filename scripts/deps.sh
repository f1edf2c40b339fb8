#!/usr/bin/env bash
# Installs what grantwire's build and tests need, or says clearly what is missing:
# Go modules and the pinned OPA tool (go.mod), and the npm packages of the foreign (Node)
# shell. The private Secret Service (gnome-keyring) is installed by scripts/keyring-lib.sh
# when a command needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "deps: Go 1.26 or later is required (https://go.dev/dl/)" >&2; exit 1; }
go mod download
go tool opa version >/dev/null
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "deps: Node.js 20 and npm are required by the foreign-shell tests (shells/wasm/node);" >&2
	echo "      on Debian: apt-get install nodejs npm — or see https://nodejs.org" >&2
	exit 1
fi
if [[ ! -d shells/wasm/node/node_modules ]]; then
	(cd shells/wasm/node && npm ci --no-audit --no-fund --loglevel=error) || {
		echo "deps: npm ci failed in shells/wasm/node (is the npm registry reachable?)" >&2
		exit 1
	}
fi
