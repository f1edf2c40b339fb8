#!/usr/bin/env bash
# Runs one command with a private PostgreSQL cluster (scripts/postgres-lib.sh) and
# GRANTWIRE_REQUIRE_POSTGRES=1, then stops it; the command's exit code is passed through.
#   scripts/with-postgres.sh go test -count=1 ./shells/postgres
#   scripts/with-keyring.sh scripts/with-postgres.sh go test -count=1 ./shells/postgres -run Copy
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/postgres-lib.sh
pg_ensure_installed || exit 1
pg_start || exit 1
trap pg_stop EXIT
GRANTWIRE_REQUIRE_POSTGRES=1 "$@"
