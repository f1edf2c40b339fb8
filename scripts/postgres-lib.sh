#!/usr/bin/env bash
# postgres-lib.sh: a private PostgreSQL cluster for grantwire's tests (source it).
#
#   . scripts/postgres-lib.sh
#   pg_ensure_installed || exit 1
#   pg_start || exit 1      # exports GRANTWIRE_TEST_POSTGRES=postgres://grantwire:<password>@127.0.0.1:<port>/grantwire
#   trap pg_stop EXIT
#
# pg_start runs initdb into a fresh temporary directory (a superuser "grantwire" with a
# random password, SCRAM authentication, TCP on 127.0.0.1 only, no Unix socket outside that
# directory), starts the server on a random free loopback port, waits until it accepts
# connections and creates the database "grantwire". Durability is off (fsync,
# synchronous_commit): the cluster lives for one test run. initdb and postgres refuse to run
# as root, so as root they run as the postgres user Debian's package creates (else nobody),
# owning only the temporary directory. pg_stop stops the server (fast shutdown) and removes
# the directory. pg_ensure_installed installs Debian's postgresql with apt-get when it is
# missing and this shell may do so (root with apt-get), and says what to install otherwise.
#
# Also exported: PG_BIN (the server's bin directory), PG_DATA, PG_PORT, PG_TMP and PG_AS
# (the OS user the server runs as; empty when it is this one), for tests that stop and start
# the server mid-run: pg_ctl_as stop|start runs pg_ctl on this cluster as that user.

pg_find_bin() {
	local d
	if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then
		return 0
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) /usr/local/pgsql/bin; do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ]; then
			PG_BIN=$d
			export PG_BIN
			return 0
		fi
	done
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		PG_BIN=$(dirname "$(command -v initdb)")
		export PG_BIN
		return 0
	fi
	return 1
}

pg_ensure_installed() {
	if pg_find_bin && command -v psql >/dev/null && command -v pg_dump >/dev/null; then
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "postgres: installing postgresql (a private cluster for the tests)..." >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null &&
			apt-get install -y -qq --no-install-recommends postgresql postgresql-client >/dev/null || {
			echo "postgres: apt-get could not install postgresql" >&2
			return 1
		}
		pg_find_bin && return 0
		echo "postgres: postgresql is installed but no initdb was found under /usr/lib/postgresql/*/bin" >&2
		return 1
	fi
	echo "postgres: the PostgreSQL tests need a PostgreSQL server and client (initdb, pg_ctl, postgres, psql, pg_dump)" >&2
	echo "postgres:   Debian/Ubuntu: sudo apt-get install --no-install-recommends postgresql postgresql-client" >&2
	echo "postgres:   Fedora: sudo dnf install postgresql-server postgresql" >&2
	return 1
}

# pg_as CMD...: runs CMD as the cluster's OS user.
pg_as() {
	if [ -n "${PG_AS:-}" ]; then
		runuser -u "$PG_AS" -- "$@"
	else
		"$@"
	fi
}

# pg_ctl_as stop|start: stops (fast) or starts this cluster and waits.
pg_ctl_as() {
	case "$1" in
	stop) pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >>"$PG_TMP/ctl.log" 2>&1 ;;
	start) pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_TMP/server.log" -w -t 30 start >>"$PG_TMP/ctl.log" 2>&1 ;;
	*) echo "pg_ctl_as: stop or start" >&2 && return 2 ;;
	esac
}

pg_start() {
	pg_find_bin || {
		echo "pg_start: no PostgreSQL server found (pg_ensure_installed)" >&2
		return 1
	}
	PG_TMP=$(mktemp -d -t grantwire-postgres.XXXXXX) || return 1
	PG_DATA="$PG_TMP/data"
	PG_AS=''
	if [ "$(id -u)" = 0 ]; then
		if id postgres >/dev/null 2>&1; then PG_AS=postgres; else PG_AS=nobody; fi
		chown "$PG_AS" "$PG_TMP" || return 1
	fi
	chmod 700 "$PG_TMP"
	local password
	password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
	printf '%s\n' "$password" >"$PG_TMP/pwfile"
	[ -n "$PG_AS" ] && chown "$PG_AS" "$PG_TMP/pwfile"
	if ! pg_as "$PG_BIN/initdb" -D "$PG_DATA" -U grantwire --pwfile="$PG_TMP/pwfile" --auth=scram-sha-256 \
		-E UTF8 --locale=C.UTF-8 --no-sync --no-instructions >"$PG_TMP/initdb.log" 2>&1; then
		echo "pg_start: initdb failed:" >&2
		cat "$PG_TMP/initdb.log" >&2
		pg_stop
		return 1
	fi
	rm -f "$PG_TMP/pwfile"
	cat >>"$PG_DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PG_TMP'
max_connections = 300
shared_buffers = 32MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_statement = 'none'
CONF
	local try
	for try in 1 2 3 4 5 6 7 8; do
		PG_PORT=$((20000 + RANDOM % 40000))
		if pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_TMP/server.log" -o "-p $PG_PORT" -w -t 30 start \
			>"$PG_TMP/ctl.log" 2>&1; then
			break
		fi
		PG_PORT=''
	done
	if [ -z "$PG_PORT" ]; then
		echo "pg_start: the server did not start:" >&2
		cat "$PG_TMP/ctl.log" "$PG_TMP/server.log" >&2 2>/dev/null
		pg_stop
		return 1
	fi
	# The port chosen is kept in the configuration, so pg_ctl_as start finds it again.
	echo "port = $PG_PORT" >>"$PG_DATA/postgresql.conf"
	export PG_TMP PG_DATA PG_PORT PG_AS
	export GRANTWIRE_TEST_POSTGRES="postgres://grantwire:$password@127.0.0.1:$PG_PORT/grantwire"
	if ! PGPASSWORD=$password psql -q -h 127.0.0.1 -p "$PG_PORT" -U grantwire -d postgres \
		-c 'create database grantwire' >"$PG_TMP/createdb.log" 2>&1; then
		echo "pg_start: could not create the database:" >&2
		cat "$PG_TMP/createdb.log" >&2
		pg_stop
		return 1
	fi
	return 0
}

pg_stop() {
	if [ -n "${PG_DATA:-}" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
		pg_as "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1
	fi
	if [ -n "${PG_TMP:-}" ]; then rm -rf "$PG_TMP"; fi
	PG_TMP='' PG_DATA='' PG_PORT=''
	unset GRANTWIRE_TEST_POSTGRES
	return 0
}
