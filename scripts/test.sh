#!/usr/bin/env bash
# Runs every test of grantwire. The real-keyring tests run against a private, headless
# Secret Service (scripts/keyring-lib.sh: its own dbus-daemon and gnome-keyring-daemon,
# installed with apt-get when missing and possible), with GRANTWIRE_REAL_KEYRING=1 so an
# unreachable store fails them instead of skipping. GRANTWIRE_REAL_KEYRING=0 make test
# skips them on purpose (they say how to run them).
set -euo pipefail
cd "$(dirname "$0")/.."
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
go tool opa test policy/grantwire
go test -count=1 ./...
