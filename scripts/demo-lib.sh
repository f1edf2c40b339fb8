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
#   check_output COMMAND OUTPUT [TEXT...]
#                           the checks of run on an output already captured
#   build_progress          reads `go build -v` and shows its progress
#   build_binaries          builds grantwire, authserver and browser into $DEMO_TMP/bin
#   rand                    prints 24 random hex digits (for planted secrets)
#   start_json NAME FIELD TRIES COMMAND...
#                           runs COMMAND in the background (stdout $DEMO_TMP/NAME.json,
#                           stderr NAME.log), waits up to TRIES×50 ms for its first line and
#                           sets STARTED_PID and STARTED (the string FIELD of that line)
#   stop_pid PID            kills and reaps PID if it is set (for the cleanup)
#   no_leaks WHERE... / PROBLEM
#                           fails with "N PROBLEM" if a line of secrets() is in the transcript
#                           or under a WHERE (the last argument is PROBLEM)
#   start_authserver ARGS   starts internal/cmd/authserver ($DEMO_TMP/bin/authserver) with
#                           ARGS; sets AUTH_PID and ISSUER (stop_pid AUTH_PID in the cleanup)
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
	check_output "$line" "$output" "$@"
	[ "$want" = 0 ] || out "(exit code $rc)"
}

# check_output COMMAND OUTPUT [TEXT...]: fail unless each TEXT appears in OUTPUT, and if a
# secret does (COMMAND names the command in the failure).
check_output() {
	local line=$1 output=$2 text
	shift 2
	for text in "$@"; do
		grep -qF -- "$text" <<<"$output" || fail "\`$line\` did not print \"$text\""
	done
	while read -r text; do
		! grep -qF -- "$text" <<<"$output" || fail "\`$line\` printed a secret"
	done < <(secrets)
}

# build_binaries builds grantwire, the local authorization server and the stand-in browser
# into $DEMO_TMP/bin, showing the progress and the time it took.
build_binaries() {
	local start=$SECONDS
	go build -v -o "$DEMO_TMP/bin/" ./cmd/grantwire ./internal/cmd/authserver ./internal/cmd/browser 2>&1 | build_progress
	[ "${PIPESTATUS[0]}" = 0 ] || fail "go build failed (Go 1.26 or later is required)"
	out "  built in $((SECONDS - start)) s"
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

rand() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }

start_json() {
	local name=$1 field=$2 tries=$3
	shift 3
	"$@" >"$DEMO_TMP/$name.json" 2>"$DEMO_TMP/$name.log" &
	STARTED_PID=$!
	for _ in $(seq "$tries"); do
		[ -s "$DEMO_TMP/$name.json" ] && break
		sleep 0.05
	done
	STARTED=$(sed -nE "s/.*\"$field\":\"([^\"]+)\".*/\1/p" "$DEMO_TMP/$name.json")
}

stop_pid() {
	if [ -n "$1" ]; then
		kill "$1" 2>/dev/null
		wait "$1" 2>/dev/null
	fi
}

no_leaks() {
	local problem=${!#} leaks=0 s
	while read -r s; do
		if grep -rqF -- "$s" "${@:1:$#-1}" "$TRANSCRIPT"; then
			leaks=$((leaks + 1))
		fi
	done < <(secrets)
	[ "$leaks" = 0 ] || fail "$leaks $problem"
}

start_authserver() {
	start_json authserver issuer 100 "$DEMO_TMP/bin/authserver" "$@"
	AUTH_PID=$STARTED_PID ISSUER=$STARTED
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
