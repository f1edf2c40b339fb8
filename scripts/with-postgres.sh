#!/usr/bin/env bash
# Runs one command with a private PostgreSQL cluster (scripts/postgres-lib.sh) and
# GRANTWIRE_REQUIRE_POSTGRES=1, then stops it; the command's exit code is passed through.
#   scripts/with-postgres.sh go test -count=1 ./shells/postgres
#   scripts/with-keyring.sh scripts/with-postgres.sh go test -count=1 ./shells/postgres -run Copy
exec "$(dirname "$0")/with-service.sh" postgres pg GRANTWIRE_REQUIRE_POSTGRES "$@"
