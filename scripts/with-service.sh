#!/usr/bin/env bash
# Runs one command with a private service started by scripts/LIB-lib.sh (its PREFIX_ensure_installed,
# PREFIX_start and PREFIX_stop) and VAR=1 in its environment, then stops the service; the
# command's exit code is passed through. scripts/with-keyring.sh and scripts/with-postgres.sh
# are this for the Secret Service and PostgreSQL.
#   scripts/with-service.sh LIB PREFIX VAR COMMAND...
set -uo pipefail
lib=$1 prefix=$2 var=$3
shift 3
cd "$(dirname "$0")/.."
. "scripts/$lib-lib.sh"
"${prefix}_ensure_installed" || exit 1
"${prefix}_start" || exit 1
trap "${prefix}_stop" EXIT
env "$var=1" "$@"
