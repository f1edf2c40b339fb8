#!/usr/bin/env bash
# make test: every check and test of grantwire, in stages, each ending with a line that says
# what it did and how long it took, and a table of every stage at the end:
#   deps, lint, wasm-check, native-check (the make targets of those names), audit (the policy
#   audit with its Rego test count), go tests (go test -json ./... through
#   internal/tools/testsum: a line per package as it ends, every failing test's whole output,
#   the Go tests passed/failed/skipped and the corpus scenarios per shell), race (the engines'
#   pools under the race detector) and mcp-conformance (N/33 auth scenarios, N/11 through mcp proxy).
# The go test stages' -json streams are kept in build/test/ (per-test times).
#
# The real-keyring tests run against a private, headless
# Secret Service (scripts/keyring-lib.sh: its own dbus-daemon and gnome-keyring-daemon,
# installed with apt-get when missing and possible), with GRANTWIRE_REAL_KEYRING=1 so an
# unreachable store fails them instead of skipping. GRANTWIRE_REAL_KEYRING=0 make test
# skips them on purpose (they say how to run them).
#
# Randomized tests run a fixed, seeded share of their inputs (GRANTWIRE_SOAK unset);
# `make soak` runs this with GRANTWIRE_SOAK=1: every input (internal/testworld/testenv.Soak).
set -euo pipefail
cd "$(dirname "$0")/.."
make=(make --no-print-directory -s)
results=build/test
mkdir -p "$results"
summary=$results/stages.tsv
summary_go=$results/go-stages.tsv
: >"$summary"
t0=$(date +%s%N)

# stage NAME COUNT-PATTERN CMD...: runs CMD, its output shown as it comes and kept in
# build/test/NAME.log; then a line with its duration and, when COUNT-PATTERN is not empty,
# the last output line matching it (its counts). A failing stage stops make test.
stage() {
	local name=$1 pattern=$2 start rc=0 secs counts=""
	shift 2
	printf '\n== test: %s\n' "$name"
	start=$(date +%s%N)
	"$@" 2>&1 | tee "$results/$name.log" || rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	if [[ -n "$pattern" ]]; then
		counts=$(grep -E "$pattern" "$results/$name.log" | tail -n 1 | sed -E 's/^(gitlint|audit|mcp-conformance|leftovers): //' || true)
	fi
	# The go test stages write their own counts (testsum -summary).
	if [[ -z "$counts" ]] && grep -q "^$name	" "$summary_go" 2>/dev/null; then
		counts=$(grep "^$name	" "$summary_go" | tail -n 1 | cut -f2)
	fi
	if ((rc == 0)); then
		printf '%s\tok\t%s\t%s\n' "$name" "$secs" "$counts" >>"$summary"
		printf '== test: %s: ok in %s s%s\n' "$name" "$secs" "${counts:+ ($counts)}"
	else
		printf '%s\tFAIL\t%s\t%s\n' "$name" "$secs" "$counts" >>"$summary"
		printf '== test: %s: FAIL (exit %d) after %s s%s; its output is above and in %s\n' "$name" "$rc" "$secs" "${counts:+ ($counts)}" "$results/$name.log"
		table
		exit "$rc"
	fi
}

# table prints every stage run so far, and the whole time.
table() {
	local total
	total=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	printf '\n== test: stages (load average now: %s)\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
	awk -F'\t' '{ printf "%-16s %-4s %8s s  %s\n", $1, $2, $3, $4 }' "$summary"
	printf '%-16s %-4s %8s s\n' total "" "$total"
}

# gotest NAME ARGS...: go test -json ARGS through testsum (its counts go to the stage line).
gotest() {
	local name=$1
	shift
	set -o pipefail
	go test -json "$@" | "$results/testsum" -stage "$name" -summary "$summary_go" -json-out "$results/$name.json"
}
: >"$summary_go"

stage deps "" "${make[@]}" deps
go build -o "$results/testsum" ./internal/tools/testsum
stage lint '^gitlint: [0-9]+ tracked files' "${make[@]}" lint
stage wasm-check "" "${make[@]}" wasm-check
stage native-check "" "${make[@]}" native-check
stage audit '^audit: [0-9]+ Rego tests' "${make[@]}" audit

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
# Software from outside the project (scripts/outside-lib.sh: the MCP TypeScript SDK's example
# OAuth server and Client, two stdio MCP servers from npm, the certified OpenID provider
# oidc-provider, Node 22; pinned by scripts/outside/package-lock.json, installed with npm ci
# into build/outside/): cmd/grantwire's outside tests run grantwire against them, and
# GRANTWIRE_REQUIRE_OUTSIDE=1 makes a missing install fail them, never skip.
. scripts/outside-lib.sh
outside_ensure_installed || {
	echo "test: the software from outside the project could not be installed (see above)" >&2
	exit 1
}
export GRANTWIRE_REQUIRE_OUTSIDE=1
# Tests clean up after themselves: the go test stages run with a user cache directory of
# this run (build/test/cache; the Go and pip caches stay where they were), and a provider
# lock directory a test leaves there (grantwire/locks/<service>-<hash>, from a native
# shell or a grantwire process without a lock directory of its own) fails make test.
export GOCACHE="${GOCACHE:-$(go env GOCACHE)}" PIP_CACHE_DIR="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}"
test_cache=$PWD/$results/cache
rm -rf "$test_cache" && mkdir -p "$test_cache"
export XDG_CACHE_HOME=$test_cache
unset GRANTWIRE_LOCK_DIR
# leftovers: no test left a lock directory in the user cache directory.
leftovers() {
	local left
	left=$(find "$test_cache/grantwire/locks" -mindepth 1 -maxdepth 1 2>/dev/null | sed "s|^$test_cache/|  \$XDG_CACHE_HOME/|")
	if [[ -n "$left" ]]; then
		echo "leftovers: the tests left $(wc -l <<<"$left") lock directories in the user cache directory:" >&2
		echo "$left" >&2
		echo "leftovers: give the test that makes one (its keyring service names it) a lock directory of its own: os.Exit(testenv.Main(m)) in its package's TestMain, or native.Options.LockDir / GRANTWIRE_LOCK_DIR under t.TempDir()" >&2
		return 1
	fi
	echo "leftovers: none: no lock directory left in the user cache directory"
}
# One package may take minutes on two busy cores (the e2e tests start many processes).
# go test runs packages (two at a time on two cores) in the order given: the slowest first
# (by their elapsed time in make test, BENCHMARKS.md "make test budget"), so that none of
# them starts last and runs alone at the end; ./... adds every other package, once.
slowest=(./internal/testworld/nodiff ./cmd/grantwire ./internal/testworld/nativeshell ./shells/python ./conformance
	./shells/native ./shells/wasm/node ./audit ./core/wasmengine ./hostabi ./surfaces/rest)
stage go-tests "" gotest go-tests -count=1 -timeout 25m "${slowest[@]}" ./...
stage leftovers '^leftovers: none' leftovers
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
	CGO_ENABLED=1 stage race "" gotest race -race -count=1 -run 'TestConcurrent|TestAbort|TestCancel' ./core/wasmengine ./core/nativeengine
else
	echo "test: no C compiler, so the race detector cannot run (Debian/Ubuntu: apt-get install gcc)" >&2
	exit 1
fi
# The official MCP conformance suite's 33 client auth scenarios against grantwire's remote
# MCP client (issue 14; installs the pinned suite and Node 22 with npm on first use), then
# its 11 client-transport scenarios through grantwire mcp proxy (issue 21 §1).
stage mcp-conformance '^mcp-conformance: [0-9]+/[0-9]+ ' scripts/mcp-conformance.sh
table
