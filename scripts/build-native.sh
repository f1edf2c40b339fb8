#!/usr/bin/env bash
# Generates core/nativeengine/policy_gen.go from policy/grantwire with the OPA pinned in go.mod:
# `go tool opa build -t plan` (the entrypoints the Wasm build uses: the policy's METADATA
# entrypoints, the same capabilities) and internal/tools/nativegen. Also generates the test
# policy of the runtime (core/nativeengine/internal/irtest), which exercises every IR
# statement and every built-in function the runtime implements. From the repository root,
# so the paths in the output are stable. With --check, generates into a temporary directory
# and fails if the result differs from the committed files.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gen() { # plan-bundle package output source
	go run ./internal/tools/nativegen -plan "$1" -pkg "$2" -o "$3" -source "$4"
}

go tool opa build -t plan --capabilities policy/capabilities.json --ignore '*_test.rego' \
	-o "$tmp/plan.tar.gz" policy/grantwire
gen "$tmp/plan.tar.gz" nativeengine "$tmp/policy_gen.go" policy/grantwire

irtest=core/nativeengine/internal/irtest
go tool opa build -t plan -e irtest/eval -e irtest/statements --ignore '*_test.rego' \
	-o "$tmp/irtest.tar.gz" "$irtest/policy"
gen "$tmp/irtest.tar.gz" irtest "$tmp/irtest_gen.go" "$irtest/policy"

if [[ "${1:-}" == "--check" ]]; then
	stale=0
	for pair in "policy_gen.go:core/nativeengine/policy_gen.go" "irtest_gen.go:$irtest/policy_gen.go"; do
		if ! cmp -s "$tmp/${pair%%:*}" "${pair#*:}"; then
			echo "${pair#*:} is stale: its policy changed without 'make native'" >&2
			stale=1
		fi
	done
	[[ $stale == 0 ]] || exit 1
	echo "the native engine's generated code matches a fresh build of policy/"
	exit 0
fi
cp "$tmp/policy_gen.go" core/nativeengine/policy_gen.go
cp "$tmp/irtest_gen.go" "$irtest/policy_gen.go"
echo "wrote core/nativeengine/policy_gen.go ($(wc -l < core/nativeengine/policy_gen.go) lines) and $irtest/policy_gen.go"
