#!/usr/bin/env bash
# Runs one command with a private, headless Secret Service (scripts/keyring-lib.sh) and
# GRANTWIRE_REAL_KEYRING=1, then stops it; the command's exit code is passed through.
#   scripts/with-keyring.sh go test -count=1 ./shells/native
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/keyring-lib.sh
keyring_ensure_installed || exit 1
keyring_start || exit 1
trap keyring_stop EXIT
GRANTWIRE_REAL_KEYRING=1 "$@"
