#!/usr/bin/env bash
# Builds policy/policy.wasm from policy/grantwire with the OPA pinned in go.mod (go tool opa),
# from the repository root so the paths embedded in the module are stable. With --check,
# builds into a temporary directory and fails if the result differs from the committed file.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go tool opa build -t wasm --capabilities policy/capabilities.json --ignore '*_test.rego' \
	-o "$tmp/bundle.tar.gz" policy/grantwire
tar -xzf "$tmp/bundle.tar.gz" -C "$tmp" policy.wasm 2>/dev/null || tar -xzf "$tmp/bundle.tar.gz" -C "$tmp" /policy.wasm
(cd "$tmp" && sha256sum policy.wasm > policy.wasm.sha256)
if [[ "${1:-}" == "--check" ]]; then
	if ! cmp -s "$tmp/policy.wasm" policy/policy.wasm || ! cmp -s "$tmp/policy.wasm.sha256" policy/policy.wasm.sha256; then
		echo "policy/policy.wasm is stale: policy/ changed without 'make wasm' (a fresh build has sha256 $(cut -c1-16 "$tmp/policy.wasm.sha256"))" >&2
		exit 1
	fi
	echo "policy.wasm matches a fresh build (sha256 $(cut -c1-16 policy/policy.wasm.sha256))"
	exit 0
fi
cp "$tmp/policy.wasm" "$tmp/policy.wasm.sha256" policy/
echo "wrote policy/policy.wasm ($(stat -c %s policy/policy.wasm) bytes, sha256 $(cut -c1-16 policy/policy.wasm.sha256))"
