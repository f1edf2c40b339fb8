#!/usr/bin/env bash
# Runs every fuzz target of the repository (each `func FuzzX` in a _test.go file) for
# FUZZTIME each (default 30s): `make fuzz`, or `FUZZTIME=10m scripts/fuzz.sh` for a long
# run, or `scripts/fuzz.sh FuzzCallback` for some targets only. `make test` runs every
# target's seed corpus as a unit test (plain `go test` does), not the fuzzing itself.
# A failing input is written under the package's testdata/fuzz/ by `go test`: commit it,
# it becomes a seed.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED="${CGO_ENABLED:-0}"
fuzztime="${FUZZTIME:-30s}"
only=("$@")
ran=0
while IFS= read -r file; do
	pkg="./$(dirname "$file")"
	for name in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		if ((${#only[@]})) && [[ ! " ${only[*]} " == *" $name "* ]]; then
			continue
		fi
		echo "fuzz: $pkg $name for $fuzztime"
		nice go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime"
		ran=$((ran + 1))
	done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | sort)
if ((ran == 0)); then
	echo "fuzz: no fuzz target ran (${only[*]:-all})" >&2
	exit 1
fi
echo "fuzz: $ran targets, $fuzztime each: ok"
