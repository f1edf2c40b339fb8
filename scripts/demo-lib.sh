#!/usr/bin/env bash
# demo-lib.sh: the pieces scripts/demo.sh (`make demo`) and scripts/fleet-demo.sh
# (`make fleet-demo`) share (source it after setting DEMO_TMP, a private temporary
# directory, and DEMO_NAME, the name failures are reported under; define secrets(), which
# prints one secret a line that no output may contain):
#
#   out TEXT / say TEXT     print (and append to $TRANSCRIPT) a line / a "# " step heading
#   fail TEXT               print "$DEMO_NAME: FAIL: TEXT" and exit 1
#   run EXIT COMMAND [TEXT...]
#                           print "$ COMMAND", run it, print its output, check its exit code,
#                           that each TEXT appears and that no secret does
#   build_progress          reads `go build -v` and shows its progress
#   start_authserver ARGS   starts internal/cmd/authserver ($DEMO_TMP/bin/authserver) with
#                           ARGS; sets AUTH_PID and ISSUER (kill AUTH_PID in the cleanup)
#   local_catalog           writes $GRANTWIRE_CATALOG: the embedded catalog with its google
#                           entry pointed at $ISSUER (nothing leaves the machine)

TRANSCRIPT=$DEMO_TMP/transcript
: >"$TRANSCRIPT"
out() { printf '%s\n' "$*" | tee -a "$TRANSCRIPT"; }
say() {
	out ""
	out "# $*"
}
fail() {
	printf '\n%s: FAIL: %s\n' "${DEMO_NAME:-demo}" "$*" >&2
	exit 1
}

# run EXIT COMMAND [TEXT...]: print "$ COMMAND", run it (stdout and stderr), print its
# output, and check the exit code, that each TEXT appears, and that no secret does.
run() {
	local want=$1 line=$2 output rc text
	shift 2
	out "\$ $line"
	output=$(eval "$line" 2>&1)
	rc=$?
	[ -z "$output" ] || out "$output"
	[ "$rc" = "$want" ] || fail "\`$line\` exited $rc, expected $want"
	for text in "$@"; do
		grep -qF -- "$text" <<<"$output" || fail "\`$line\` did not print \"$text\""
	done
	while read -r text; do
		! grep -qF -- "$text" <<<"$output" || fail "\`$line\` printed a secret"
	done < <(secrets)
	[ "$want" = 0 ] || out "(exit code $rc)"
}


# build_progress reads `go build -v` (the packages it compiles, one a line) and shows the
# progress: a counter on a terminal, a line every 50 packages otherwise. Other lines (a
# compile error) are printed as they are.
build_progress() {
	local n=0 line
	while IFS= read -r line; do
		case "$line" in
		'' | *' '* | '#'*) printf '%s\n' "$line" ;;
		*)
			n=$((n + 1))
			if [ -t 1 ]; then
				printf '\r  %d packages compiled (%.50s)\033[K' "$n" "$line"
			elif [ $((n % 50)) = 0 ]; then
				out "  $n packages compiled so far..."
			fi
			;;
		esac
	done
	[ ! -t 1 ] || [ "$n" = 0 ] || printf '\r\033[K'
	if [ "$n" = 0 ]; then
		out "  up to date (Go's build cache had everything)"
	else
		out "  $n package(s) compiled"
	fi
}

start_authserver() {
	"$DEMO_TMP/bin/authserver" "$@" >"$DEMO_TMP/authserver.json" 2>"$DEMO_TMP/authserver.log" &
	AUTH_PID=$!
	for _ in $(seq 100); do
		[ -s "$DEMO_TMP/authserver.json" ] && break
		sleep 0.05
	done
	ISSUER=$(sed -nE 's/.*"issuer":"([^"]+)".*/\1/p' "$DEMO_TMP/authserver.json")
	[ -n "$ISSUER" ] || fail "the local authorization server did not start: $(cat "$DEMO_TMP/authserver.log")"
}

local_catalog() {
	env -u GRANTWIRE_CATALOG "$DEMO_TMP/bin/grantwire" catalog --raw >"$DEMO_TMP/catalog.embedded.json" || fail "grantwire catalog --raw failed"
	sed -e "s#https://accounts.google.com/o/oauth2/v2/auth#$ISSUER/authorize#" \
		-e "s#https://oauth2.googleapis.com/token#$ISSUER/token#" \
		-e "s#https://openidconnect.googleapis.com/v1/userinfo#$ISSUER/userinfo#" \
		-e "s#https://oauth2.googleapis.com/revoke#$ISSUER/revoke#" \
		-e "s#https://oauth2.googleapis.com/device/code#$ISSUER/devicecode#" \
		-e "s#\"https://accounts.google.com\"#\"$ISSUER\"#" \
		"$DEMO_TMP/catalog.embedded.json" >"$GRANTWIRE_CATALOG"
}
