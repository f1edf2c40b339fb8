#!/usr/bin/env bash
# demo.sh (`make demo`): grantwire's main job end to end, on embedded defaults, as a
# tutorial. Everything it needs is private and thrown away at the end: a temporary
# GRANTWIRE_HOME, a private headless Secret Service (scripts/keyring-lib.sh; gnome-keyring
# is installed with apt-get when missing and possible), and the local OAuth authorization
# server (internal/cmd/authserver) standing in for Google, with a stand-in browser
# (internal/cmd/browser) that gives consent (also to a device code, as the user on another
# device would).
#
# Every step says what it shows, prints the command and its real output, and checks that
# it behaved as announced (exit code and text); the demo stops with exit 1 at the first
# step that does not. No secret is ever printed: at the end the transcript and every file
# grantwire wrote are searched for the planted secrets and the tokens the server issued.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/keyring-lib.sh

DEMO_TMP=$(mktemp -d -t grantwire-demo.XXXXXX) || exit 1
DEMO_NAME=demo
. scripts/demo-lib.sh
AUTH_PID=''
SERVE_PID=''
cleanup() {
	stop_pid "$SERVE_PID"
	stop_pid "$AUTH_PID"
	keyring_stop
	rm -rf "$DEMO_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Secrets the demo plants or receives; none may ever appear in the transcript or a file.
# Tokens the local server issues all start with $TOKEN_PREFIX.
TOKEN_PREFIX=demotok
CLIENT_SECRET="client-secret-$(rand)"
NEW_CLIENT_SECRET="client-secret-$(rand)"
BRAVE_API_KEY="brave-api-key-$(rand)"
TOKEN=''
secrets() { printf '%s\n' "$CLIENT_SECRET" "$NEW_CLIENT_SECRET" "$BRAVE_API_KEY" "${TOKEN_PREFIX}_rt_" "${TOKEN_PREFIX}_at_" "${TOKEN_PREFIX}_device_" ${TOKEN:+"$TOKEN"}; }

# device_connect COMMAND [TEXT...]: print "$ COMMAND", run it in the background, approve the
# device code it shows as its user would (the stand-in browser opens the verification URI
# that carries the code), then print its output and check it as run does (exit 0).
device_connect() {
	local line=$1 log=$DEMO_TMP/device.log pid uri rc output text
	shift
	out "\$ $line"
	eval "$line" >"$log" 2>&1 &
	pid=$!
	uri=''
	for _ in $(seq 300); do
		uri=$(sed -nE 's/^\(or open (.+), which carries the code\)$/\1/p' "$log")
		[ -n "$uri" ] && break
		sleep 0.05
	done
	[ -n "$uri" ] || { kill "$pid" 2>/dev/null; fail "\`$line\` showed no device code: $(cat "$log")"; }
	"$DEMO_TMP/bin/browser" "$uri" || { kill "$pid" 2>/dev/null; fail "the stand-in browser could not approve the code"; }
	wait "$pid"
	rc=$?
	output=$(cat "$log")
	out "$output"
	[ "$rc" = 0 ] || fail "\`$line\` exited $rc, expected 0"
	check_output "$line" "$output" "$@"
}

say "grantwire demo: which AI agent may use which connection, with every secret in the OS credential store."
command -v go >/dev/null || fail "Go 1.26 or later is required (https://go.dev/dl/)"
say "Downloading the Go modules grantwire needs (go mod download; nothing when they are already here)..."
go mod download || fail "go mod download failed (is the Go module proxy reachable?)"
say "Building grantwire, the local OAuth server and the stand-in browser. The first build compiles"
out "#    every dependency (a few minutes on 2 cores); later builds take seconds."
build_binaries

say "Starting a private Secret Service (its own dbus-daemon and gnome-keyring-daemon, a fresh login keyring)..."
keyring_ensure_installed || fail "no Secret Service: install gnome-keyring as explained above, then run make demo again"
keyring_start || fail "the private Secret Service did not start"

say "Starting the local OAuth authorization server on 127.0.0.1 (it consents automatically)..."
start_authserver -client-id demo-desktop-client -client-secret "$CLIENT_SECRET" \
	-account ada@example.com -token-prefix "$TOKEN_PREFIX" -device-interval 2
out "the local server is $ISSUER"

# The CLI under test, in a private world: its own home, the private keyring, a catalog whose
# google entry points at the local server, and the stand-in browser.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^GRANTWIRE_')
export GRANTWIRE_HOME=$DEMO_TMP/home
export BROWSER=$DEMO_TMP/bin/browser
export PATH="$DEMO_TMP/bin:$PATH"
hash -r
export GRANTWIRE_CATALOG=$DEMO_TMP/catalog.json
local_catalog

GMAIL=https://www.googleapis.com/auth/gmail.readonly

say "1. The catalog is embedded. For this demo GRANTWIRE_CATALOG replaces it with a copy whose"
out "#    google entry points at the local server instead of accounts.google.com (nothing leaves this machine)."
run 0 "grantwire catalog google" "authorization:" "$ISSUER/authorize" "$ISSUER/token"

say "2. Store the OAuth client the provider issued (a Desktop app registration). The secret comes"
out "#    from stdin, never from an argument (shell history, process list), and goes to the keyring."
run 0 "printf '%s\n' \"\$CLIENT_SECRET\" | grantwire configure google --client-id demo-desktop-client --client-secret-stdin" \
	"Stored the google OAuth client id and secret in the credential store"

say "3. Connect: PKCE through a one-shot listener on 127.0.0.1. grantwire opens \$BROWSER, here the"
out "#    stand-in browser, and the local server consents at once; the refresh token goes to the keyring."
run 0 "grantwire connect google --scopes openid,$GMAIL --timeout 60s" \
	"Connected google as ada@example.com with $GMAIL openid"
run 0 "grantwire status google" "connected" "ada@example.com, 2 scope(s)"

say "4. A connection alone gives no agent anything: grant the email agent read access to Gmail."
run 0 "grantwire grants grant google builtin:email --scopes $GMAIL" "Granted google → builtin:email: $GMAIL"

say "5. The email agent gets an access token (refreshed through the local server). A token is a"
out "#    secret: a script captures it from a pipe; the demo prints only its length."
out "\$ TOKEN=\$(grantwire token google --agent builtin:email --scopes $GMAIL)"
TOKEN=$(grantwire token google --agent builtin:email --scopes "$GMAIL" 2>"$DEMO_TMP/token.err") ||
	fail "grantwire token exited $?: $(cat "$DEMO_TMP/token.err")"
[ -n "$TOKEN" ] && [ ! -s "$DEMO_TMP/token.err" ] || fail "grantwire token printed no token, or complained: $(cat "$DEMO_TMP/token.err")"
run 0 "echo \"an access token of \${#TOKEN} characters (not shown)\"" "an access token of"
run 0 "grantwire test google --agent builtin:email --scopes $GMAIL" "google: OK" "builtin:email obtained a token valid until"

say "6. The gate: the calendar agent holds no grant on google, so it gets nothing (exit 4, and not"
out "#    a word about the connection); the error names the command that would grant it."
run 4 "grantwire token google --agent builtin:calendar --scopes $GMAIL" \
	"builtin:calendar" "fix: grantwire grants grant google builtin:calendar --scopes $GMAIL"

say "7. A local MCP server takes an API key in its environment: KEY=VALUE lines on stdin, stored in"
out "#    the keyring; mcp_servers.json holds only a reference to it."
run 0 "printf 'BRAVE_API_KEY=%s\n' \"\$BRAVE_API_KEY\" | grantwire configure mcp-brave-search --from-stdin" \
	"Configured mcp-brave-search: BRAVE_API_KEY stored in the credential store."
out "#    This demo's home is not ~/.grantwire, so its secrets are under a keyring service of its own"
out "#    (grantwire.connections.<hash of the home>): two homes never share secrets unless told to"
out "#    (--keyring-service)."
run 0 "cat \"\$GRANTWIRE_HOME\"/mcp_servers.json" '"BRAVE_API_KEY": {' '"$keyring": "grantwire.connections.' ':mcp-brave-search:BRAVE_API_KEY"'

say "8. Show its tools to the research agent. One click: the agent declares it needs the server, so"
out "#    activation also grants it (\"use\")."
run 0 "grantwire activations activate mcp-brave-search builtin:research" \
	"Granted mcp-brave-search → builtin:research: use" "Activated mcp-brave-search for builtin:research."

say "9. The servers each agent sees: a server is visible iff the agent holds a grant AND the pair is"
out "#    active. The research agent sees Brave Search; the chat agent sees nothing. Keys by name only."
run 0 "grantwire mcp list" "mcp-brave-search" "BRAVE_API_KEY" "builtin:research"
run 0 "grantwire mcp list --agent builtin:research" "MCP servers visible to builtin:research" "mcp-brave-search"
run 0 "grantwire mcp list --agent builtin:chat" "No MCP server is visible to builtin:chat"

say "10. Rotate the OAuth client (a new registration). The connection was issued under the old client:"
out "#     status reports it stale (read-only), and the next use trips the client-hash tripwire, clears"
out "#     the connection under the provider's lock and asks for re-authorization (exit 4)."
run 0 "printf '%s\n' \"\$NEW_CLIENT_SECRET\" | grantwire configure google --client-id demo-desktop-client-2 --client-secret-stdin" \
	"Stored the google OAuth client id and secret"
run 0 "grantwire status google" "stale"
run 4 "grantwire token google --agent builtin:email --scopes $GMAIL" "fix: grantwire connect google --scopes"
run 0 "grantwire status google" "not connected"

say "11. Disconnect wipes a connector's secrets, its grants and its activations: connecting the same"
out "#     id again inherits no earlier decision."
run 0 "grantwire disconnect google" "Revoked the grants of builtin:email"
run 0 "grantwire disconnect mcp-brave-search" "Disconnected mcp-brave-search." \
	"Revoked the grants of builtin:research" "Deactivated it for builtin:research"
run 0 "grantwire grants list" "No grants."
run 0 "grantwire activations list" "No activations."
run 0 "grantwire mcp list" "No MCP servers are configured."

say "12. No browser on this machine (over SSH, in a container): the device flow (RFC 8628). grantwire"
out "#     shows a code and where to enter it on any device, then polls the provider until you approve."
out "#     Google allows it for sign-in and Drive files only: Gmail is refused, with the command that"
out "#     authorizes it in a browser elsewhere and takes the redirect pasted back (exit 3)."
run 3 "grantwire connect google --device --scopes openid,$GMAIL" "fix: grantwire connect google --scopes $GMAIL,openid --no-browser"
out "#     Google wants a client registered for limited-input devices for it: store that one (here, the"
out "#     first client again). A helper plays you: it reads the code grantwire shows and approves it"
out "#     on the verification page with the stand-in browser."
run 0 "printf '%s\n' \"\$CLIENT_SECRET\" | grantwire configure google --client-id demo-desktop-client --client-secret-stdin" \
	"Stored the google OAuth client id and secret"
device_connect "grantwire connect google --device --scopes openid,email --timeout 60s" \
	"To authorize google, open $ISSUER/device on any device and enter the code:" "Connected google as ada@example.com with email openid"
run 0 "grantwire status google" "connected" "ada@example.com, 2 scope(s)"
say "13. The same operations over HTTP: grantwire serve prints its URL (open it for Settings → Connectors;"
out "#     every change made there or by the CLI shows live). It binds 127.0.0.1 only, and every POST, PUT"
out "#     and DELETE needs the header X-Grantwire-UI: 1, so another web site cannot act through it."
out "\$ grantwire serve &"
start_json serve url 200 "$DEMO_TMP/bin/grantwire" serve
SERVE_PID=$STARTED_PID SERVE_URL=$STARTED
[ -n "$SERVE_URL" ] || fail "grantwire serve did not start: $(cat "$DEMO_TMP/serve.log")"
out "$(cat "$DEMO_TMP/serve.json")"
out "Settings → Connectors: $SERVE_URL"
if command -v curl >/dev/null; then
	run 0 "curl -s \"\$SERVE_URL/api/connectors/mcp-brave-search\"" '"id":"mcp-brave-search"' '"configured":false'
	run 0 "curl -s -X PUT -d '{\"scopes\": [\"use\"]}' \"\$SERVE_URL/api/connectors/mcp-brave-search/grants/builtin:chat\"" '"code":"UI_HEADER_REQUIRED"'
fi
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "grantwire serve did not stop cleanly on SIGTERM: $(cat "$DEMO_TMP/serve.log")"
cat "$DEMO_TMP/serve.log" >>"$TRANSCRIPT"
out "(stopped with SIGTERM)"

say "14. What grantwire wrote: metadata only, files 0600 in a 0700 directory; every secret is in the keyring."
run 0 "cd \"\$GRANTWIRE_HOME\" && stat -c '%A  %n' . * connectors/*" "drwx------  connectors" "-rw-------  mcp_servers.json" \
	"-rw-------  connectors/grants.json" "-rw-------  connectors/state.json"
no_leaks "$GRANTWIRE_HOME" "planted secrets or issued tokens were found in the transcript or under GRANTWIRE_HOME"
say "No client secret, API key, refresh token or access token appears in this transcript or in any file"
out "# under GRANTWIRE_HOME. demo: ok"
