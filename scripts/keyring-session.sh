#!/usr/bin/env bash
# keyring-session.sh: a Secret Service for grantwire on a machine without a desktop session
# (a server, a container, SSH), started once, kept for as many commands as you like,
# stopped at the end. It prints the environment to eval:
#
#   eval "$(scripts/keyring-session.sh start)"     # a private dbus-daemon + gnome-keyring-daemon
#   grantwire configure google --client-id … --client-secret-file ~/google-secret
#   grantwire status                               # the same keyring: the client is remembered
#   eval "$(scripts/keyring-session.sh stop)"      # stops both daemons
#
# start                 a throwaway keyring (its own random password): stop forgets every secret
# start --keep DIR      the keyring's files live in DIR (created 0700) and survive stop; they are
#                       encrypted with a password read from $GRANTWIRE_KEYRING_PASSWORD_FILE, or
#                       asked for on the terminal (the first start sets it)
# stop                  stops the session named by $GRANTWIRE_KEYRING_SESSION
# status                says whether that session is running (exit 0) or not (exit 1)
#
# start also writes the session's D-Bus address to the keyring session file,
# ${XDG_CACHE_HOME:-~/.cache}/grantwire/keyring-session (and ~/.cache/grantwire/keyring-session
# when XDG_CACHE_HOME is elsewhere), mode 0600; stop removes it. grantwire reads it when
# DBUS_SESSION_BUS_ADDRESS is unset, so an MCP client that starts grantwire with a filtered
# environment (HOME, PATH, USER, SHELL, TERM, LOGNAME) reaches this session too.
#
# The daemons are gnome-keyring's, installed with apt-get when missing and possible
# (scripts/keyring-lib.sh). For one command with a throwaway keyring (the tests), use
# scripts/with-keyring.sh instead. Messages go to stderr; only the environment is printed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/keyring-lib.sh"

say() { printf 'keyring-session: %s\n' "$*" >&2; }
usage() {
	say "usage: eval \"\$($0 start [--keep DIR])\" | eval \"\$($0 stop)\" | $0 status"
	exit 2
}

# running DIR: the session in DIR has both daemons alive (and they are ours).
running() {
	local dir=$1 pid name
	[ -n "$dir" ] && [ -f "$dir/pids" ] || return 1
	while read -r pid name; do
		[ -r "/proc/$pid/comm" ] && grep -q "^${name:0:15}" "/proc/$pid/comm" || return 1
	done <"$dir/pids"
	return 0
}

# session_files: where the keyring session file is written (as grantwire reads it).
session_files() {
	local home_file=$HOME/.cache/grantwire/keyring-session
	if [ -n "${XDG_CACHE_HOME:-}" ] && [ "$XDG_CACHE_HOME/grantwire/keyring-session" != "$home_file" ]; then
		printf '%s\n' "$XDG_CACHE_HOME/grantwire/keyring-session"
	fi
	printf '%s\n' "$home_file"
}

# write_session_files ADDRESS: each file written whole (a temporary file renamed), 0600, in
# a 0700 directory.
write_session_files() {
	local f dir tmp
	while read -r f; do
		dir=$(dirname "$f")
		mkdir -p "$dir" && chmod 700 "$dir" || return 1
		tmp=$(mktemp "$dir/.keyring-session.XXXXXX") || return 1
		printf '%s\n' "$1" >"$tmp" && chmod 600 "$tmp" && mv -f "$tmp" "$f" || { rm -f "$tmp"; return 1; }
	done < <(session_files)
}

# remove_session_files ADDRESS: only the files that name this session.
remove_session_files() {
	local f
	while read -r f; do
		if [ -f "$f" ] && [ "$(head -n1 "$f")" = "$1" ]; then rm -f "$f"; fi
	done < <(session_files)
}

start() {
	local keep=''
	case "${1:-}" in
	'') ;;
	--keep)
		[ -n "${2:-}" ] || usage
		keep=$2
		;;
	*) usage ;;
	esac
	if running "${GRANTWIRE_KEYRING_SESSION:-}"; then
		say "a session is already running ($GRANTWIRE_KEYRING_SESSION); stop it first: eval \"\$($0 stop)\""
		exit 1
	fi
	keyring_ensure_installed || exit 1
	local password
	if [ -n "$keep" ]; then
		mkdir -p "$keep" && chmod 700 "$keep" || exit 1
		keep=$(cd "$keep" && pwd)
		export KR_DATA_DIR=$keep
		if [ -n "${GRANTWIRE_KEYRING_PASSWORD_FILE:-}" ]; then
			password=$(head -n1 "$GRANTWIRE_KEYRING_PASSWORD_FILE") || exit 1
		elif [ -r /dev/tty ] && [ -w /dev/tty ]; then
			printf 'keyring password for %s: ' "$keep" >/dev/tty
			IFS= read -rs password </dev/tty
			printf '\n' >/dev/tty
		else
			say "--keep needs the keyring's password: set GRANTWIRE_KEYRING_PASSWORD_FILE, or run it on a terminal"
			exit 1
		fi
		[ -n "$password" ] || { say "the keyring's password must not be empty"; exit 1; }
	else
		password=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
	fi
	KEYRING_CI_PASSWORD=$password keyring_start >/dev/null || exit 1
	printf '%s dbus-daemon\n%s gnome-keyring-daemon\n' "$KR_DBUS_PID" "$KR_GKD_PID" >"$KR_TMP/pids"
	printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" >"$KR_TMP/address"
	write_session_files "$DBUS_SESSION_BUS_ADDRESS" || say "could not write the keyring session file ($(session_files | head -n1)); clients that filter the environment will not find this session"
	if [ -n "$keep" ]; then
		say "Secret Service started (keyring kept in $keep); stop it with: eval \"\$($0 stop)\""
	else
		say "Secret Service started (a throwaway keyring: stop forgets its secrets); stop it with: eval \"\$($0 stop)\""
	fi
	printf 'export DBUS_SESSION_BUS_ADDRESS=%q\n' "$DBUS_SESSION_BUS_ADDRESS"
	printf 'export GRANTWIRE_KEYRING_SESSION=%q\n' "$KR_TMP"
}

stop() {
	local dir=${GRANTWIRE_KEYRING_SESSION:-} pid name i
	if [ -z "$dir" ] || [ ! -f "$dir/pids" ]; then
		say "no session to stop (GRANTWIRE_KEYRING_SESSION is unset or stale)"
		printf 'unset GRANTWIRE_KEYRING_SESSION\n'
		return 0
	fi
	while read -r pid name; do
		if [ -r "/proc/$pid/comm" ] && grep -q "^${name:0:15}" "/proc/$pid/comm"; then
			kill "$pid" 2>/dev/null
			for i in $(seq 50); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
	done < <(tac "$dir/pids")
	[ -f "$dir/address" ] && remove_session_files "$(head -n1 "$dir/address")"
	rm -rf "$dir"
	say "Secret Service stopped"
	printf 'unset DBUS_SESSION_BUS_ADDRESS GRANTWIRE_KEYRING_SESSION\n'
}

case "${1:-}" in
start)
	shift
	start "$@"
	;;
stop) stop ;;
status)
	if running "${GRANTWIRE_KEYRING_SESSION:-}"; then
		say "running ($GRANTWIRE_KEYRING_SESSION)"
		exit 0
	fi
	say "not running"
	exit 1
	;;
*) usage ;;
esac
