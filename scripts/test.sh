#!/usr/bin/env bash
# Runs every Go test of grantwire (`make test` runs the policy audit, with `opa test`, first). The real-keyring tests run against a private, headless
# Secret Service (scripts/keyring-lib.sh: its own dbus-daemon and gnome-keyring-daemon,
# installed with apt-get when missing and possible), with GRANTWIRE_REAL_KEYRING=1 so an
# unreachable store fails them instead of skipping. GRANTWIRE_REAL_KEYRING=0 make test
# skips them on purpose (they say how to run them).
set -euo pipefail
cd "$(dirname "$0")/.."
export GRANTWIRE_REQUIRE_NODE=1 # the foreign (Node) shell runs the corpus; a missing Node fails, never skips
export GRANTWIRE_REQUIRE_PYTHON=1 # the Python shell runs the corpus (pytest, from go test ./shells/python); a missing Python fails, never skips
if [[ "${GRANTWIRE_REAL_KEYRING:-}" != "0" ]]; then
	. scripts/keyring-lib.sh
	keyring_ensure_installed || {
		echo "test: no Secret Service for the real-keyring tests (see above); GRANTWIRE_REAL_KEYRING=0 make test skips them" >&2
		exit 1
	}
	keyring_start
	trap keyring_stop EXIT
	export GRANTWIRE_REAL_KEYRING=1
fi
# The PostgreSQL shell (shells/postgres) runs the corpus and its tests, and cmd/grantwire's
# store copy its round trips, against a private cluster on a random loopback port
# (scripts/postgres-lib.sh; Debian's postgresql installed with apt-get when missing and
# possible); GRANTWIRE_REQUIRE_POSTGRES=1 makes a missing server fail them, never skip.
. scripts/postgres-lib.sh
pg_ensure_installed || {
	echo "test: no PostgreSQL for the store tests (see above)" >&2
	exit 1
}
pg_start
trap 'pg_stop; if declare -F keyring_stop >/dev/null; then keyring_stop; fi' EXIT
export GRANTWIRE_REQUIRE_POSTGRES=1
# The Connectors page's browser test (surfaces/rest) drives a real headless Chromium:
# Debian's chromium is installed with apt-get when missing and possible, as gnome-keyring is.
. scripts/chromium-lib.sh
chromium_ensure_installed || {
	echo "test: no Chromium for the page's browser test (see above)" >&2
	exit 1
}
export GRANTWIRE_REQUIRE_BROWSER=1
# One package may take minutes on two busy cores (the e2e tests start many processes).
go test -count=1 -timeout 25m ./...
# The Wasm engine's pool under the race detector (16 goroutines on 3 instances, aborts,
# cancellations), and the native engine's shared state (its cache of data-only rules, its
# pool of evaluations).
# The race detector needs a C compiler: gcc is installed with apt-get when missing and
# possible, as gnome-keyring is.
if ! command -v gcc >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "test: installing gcc (the race detector needs a C compiler)..." >&2
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null ||
		echo "test: apt-get could not install gcc" >&2
fi
if command -v gcc >/dev/null; then
	CGO_ENABLED=1 go test -race -count=1 -run 'TestConcurrent|TestAbort|TestCancel' ./core/wasmengine ./core/nativeengine
else
	echo "test: no C compiler, so the race detector cannot run (Debian/Ubuntu: apt-get install gcc)" >&2
	exit 1
fi
# The official MCP conformance suite's 27 client auth scenarios against grantwire's remote
# MCP client (issue 14; installs the pinned suite and Node 22 with npm on first use).
scripts/mcp-conformance.sh
