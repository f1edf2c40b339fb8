#!/usr/bin/env bash
# fleet-demo.sh (`make fleet-demo`): docs/fleet.md §6 end to end. Two machines — two
# grantwire CLIs with homes and XDG directories of their own and no Secret Service — share
# one private PostgreSQL (scripts/postgres-lib.sh) and one key file made by `grantwire
# store new-key`. Machine A connects google to the local authorization server
# (internal/cmd/authserver, with the stand-in browser internal/cmd/browser consenting, as in
# scripts/demo.sh) and grants an agent; machine B hands that agent a token from the same
# connection; a revoke on A is refused by B's very next call. Each step prints its command
# and output and is checked (scripts/demo-lib.sh); no secret is printed or written. The
# cluster, the server and every file are removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/postgres-lib.sh

DEMO_TMP=$(mktemp -d -t grantwire-fleet-demo.XXXXXX) || exit 1
DEMO_NAME=fleet-demo
. scripts/demo-lib.sh
AUTH_PID=''
cleanup() {
	stop_pid "$AUTH_PID"
	pg_stop
	rm -rf "$DEMO_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

TOKEN_PREFIX=fleettok
CLIENT_SECRET="client-secret-$(rand)"
PG_PASSWORD=''
TOKEN=''
secrets() {
	printf '%s\n' "$CLIENT_SECRET" "${TOKEN_PREFIX}_rt_" "${TOKEN_PREFIX}_at_" ${PG_PASSWORD:+"$PG_PASSWORD"} ${TOKEN:+"$TOKEN"}
}

say "grantwire fleet demo: two machines share one PostgreSQL store; a connection made on one serves the other."
command -v go >/dev/null || fail "Go 1.26 or later is required (https://go.dev/dl/)"
say "Building grantwire, the local OAuth server and the stand-in browser..."
build_binaries

say "Starting a private PostgreSQL (initdb in a temporary directory, 127.0.0.1 only, a random password)..."
pg_ensure_installed || fail "no PostgreSQL: install it as explained above, then run make fleet-demo again"
pg_start || fail "the private PostgreSQL did not start"
STORE=$GRANTWIRE_TEST_POSTGRES
PG_PASSWORD=$(sed -E 's#^postgres://[^:]+:([^@]+)@.*#\1#' <<<"$STORE")
unset GRANTWIRE_TEST_POSTGRES
out "PostgreSQL listens on 127.0.0.1:$PG_PORT (its URL, with the password, is in \$STORE; never printed)"

say "Starting the local OAuth authorization server on 127.0.0.1 (it consents automatically)..."
start_authserver -client-id fleet-desktop-client -client-secret "$CLIENT_SECRET" \
	-account ada@example.com -token-prefix "$TOKEN_PREFIX"
out "the local server is $ISSUER"

while read -r v; do unset "$v"; done < <(compgen -e | grep '^GRANTWIRE_')
unset DBUS_SESSION_BUS_ADDRESS
export BROWSER=$DEMO_TMP/bin/browser
export PATH="$DEMO_TMP/bin:$PATH"
hash -r
export GRANTWIRE_CATALOG=$DEMO_TMP/catalog.json
local_catalog
export STORE

# A CMD... / B CMD...: run CMD as machine A / B: a HOME and XDG directories of its own.
machine() {
	local m=$DEMO_TMP/machines/$1
	shift
	mkdir -p "$m/home" "$m/config" "$m/cache" "$m/data" "$m/state" && chmod 700 "$m"
	env HOME="$m/home" XDG_CONFIG_HOME="$m/config" XDG_CACHE_HOME="$m/cache" XDG_DATA_HOME="$m/data" \
		XDG_STATE_HOME="$m/state" "$@"
}
A() { machine A "$@"; }
B() { machine B "$@"; }

GMAIL=https://www.googleapis.com/auth/gmail.readonly

say "1. The key-encryption key, made once. It never enters the database (only its id does); every"
out "#    machine gets the same file (mode 0600) and names it in GRANTWIRE_STORE_KEY_FILE."
export GRANTWIRE_STORE_KEY_FILE=$DEMO_TMP/store.key
run 0 "A grantwire store new-key \"\$GRANTWIRE_STORE_KEY_FILE\""
run 0 "stat -c '%A' \"\$GRANTWIRE_STORE_KEY_FILE\"" "-rw-------"

say "2. Machine A stores the OAuth client and connects google (the stand-in browser consents). With"
out "#    --store the client secret and the refresh token go to the store, sealed with that key."
run 0 "printf '%s\n' \"\$CLIENT_SECRET\" | A grantwire --store \"\$STORE\" configure google --client-id fleet-desktop-client --client-secret-stdin" \
	"Stored the google OAuth client id and secret"
run 0 "A grantwire --store \"\$STORE\" connect google --scopes openid,$GMAIL --timeout 60s" \
	"Connected google as ada@example.com"

say "3. Machine A grants the email agent read access to Gmail."
run 0 "A grantwire --store \"\$STORE\" grants grant google builtin:email --scopes $GMAIL" \
	"Granted google → builtin:email: $GMAIL"

say "4. Machine B has never connected anything: it sees A's connection and grant in the store."
run 0 "B grantwire --store \"\$STORE\" status google" "connected" "ada@example.com"

say "5. Machine B hands the email agent a token from that connection (printed as its length only)."
out "\$ TOKEN=\$(B grantwire --store \"\$STORE\" token google --agent builtin:email --scopes $GMAIL)"
TOKEN=$(B grantwire --store "$STORE" token google --agent builtin:email --scopes "$GMAIL" 2>"$DEMO_TMP/token.err") ||
	fail "grantwire token on machine B exited $?: $(cat "$DEMO_TMP/token.err")"
[ -n "$TOKEN" ] && [ ! -s "$DEMO_TMP/token.err" ] || fail "grantwire token on machine B printed no token, or complained: $(cat "$DEMO_TMP/token.err")"
run 0 "echo \"machine B: an access token of \${#TOKEN} characters (not shown)\"" "an access token of"

say "6. Machine A revokes the grant; machine B's very next call is refused (exit 4), with the fix."
run 0 "A grantwire --store \"\$STORE\" grants revoke google builtin:email" "builtin:email"
run 4 "B grantwire --store \"\$STORE\" token google --agent builtin:email --scopes $GMAIL" \
	"fix: grantwire grants grant google builtin:email --scopes $GMAIL"
out "machine B refused the revoked grant at once"

no_leaks "$DEMO_TMP/machines" "secrets or issued tokens were found in the transcript or under the machines' directories"
say "No client secret, database password, refresh or access token appears in this transcript or in"
out "# a file of either machine."
out ""
out "fleet-demo: ok: one connection shared by two machines through PostgreSQL; a revoke on A refused by B's next call"
