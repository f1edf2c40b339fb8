#!/usr/bin/env bash
# Runs one command with a private, headless Secret Service (scripts/keyring-lib.sh) and
# GRANTWIRE_REAL_KEYRING=1, then stops it; the command's exit code is passed through.
#   scripts/with-keyring.sh go test -count=1 ./shells/native
exec "$(dirname "$0")/with-service.sh" keyring keyring GRANTWIRE_REAL_KEYRING "$@"
