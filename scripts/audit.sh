#!/usr/bin/env bash
# The policy audit (`make audit`), with OPA's own tools and the OPA pinned in go.mod:
#   1. opa fmt --fail -l: every module is formatted;
#   2. opa check --strict --capabilities policy/capabilities.json: strict, and only the
#      builtins the Wasm module implements (no clock, randomness, network or host calls);
#   3. opa test --coverage with the line-coverage threshold (scripts/coverage.sh, 95 %);
#   4. METADATA (go test ./policy, with OPA's ast package): every package and every public
#      rule has a title and a description, every operation's decision rule (and decide,
#      manifest) is `entrypoint: true`, the routed operations are the manifest's, and the
#      modules compile against the capabilities;
#   5. a self-test: each check above fails on a module that breaks it.
set -euo pipefail
cd "$(dirname "$0")/.."
OPA=(go tool opa)
POLICY=policy/grantwire
CAPS=policy/capabilities.json
THRESHOLD=${COVERAGE_THRESHOLD:-95}

step() { printf '\n== audit: %s\n' "$*"; }
fail() { echo "audit: FAIL: $*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step "opa fmt --fail -l $POLICY"
if ! "${OPA[@]}" fmt --fail -l "$POLICY" >"$tmp/fmt"; then
	cat "$tmp/fmt" >&2
	fail "the files above are not formatted; run: go tool opa fmt -w $POLICY"
fi
echo "formatted"

step "opa check --strict --capabilities $CAPS $POLICY"
"${OPA[@]}" check --strict --capabilities "$CAPS" "$POLICY" || fail "opa check found the errors above"
echo "strict and pure"

step "opa test --coverage (threshold ${THRESHOLD}%)"
scripts/coverage.sh --threshold "$THRESHOLD"
# opa test failed above unless every test passed; these are the tests it ran (its test_
# rules: opa test --coverage reports coverage, not the tests).
rego_tests=$(grep -rhcE '^test_[A-Za-z0-9_]*' --include='*_test.rego' "$POLICY" | awk '{ n += $1 } END { print n + 0 }')

step "METADATA, entrypoints and capabilities (go test ./policy)"
go test -count=1 -run 'TestPolicy|TestMetadataCheck|TestEntrypointCheck|TestCapabilities' ./policy/

step "self-test: every check fails on a module that breaks it"
mkdir -p "$tmp/bad"
cp -r "$POLICY" "$tmp/bad/grantwire"
for call in 'time.now_ns()' 'http.send({"method": "get", "url": "https://example.com"})' 'rand.intn("x", 10)'; do
	printf 'package grantwire.impure\n\nx := %s\n' "$call" >"$tmp/bad/grantwire/impure.rego"
	if "${OPA[@]}" check --strict --capabilities "$CAPS" "$tmp/bad/grantwire" >"$tmp/out" 2>&1; then
		fail "opa check --capabilities accepted a module calling $call"
	fi
	grep -q "undefined function ${call%%(*}" "$tmp/out" || { cat "$tmp/out" >&2; fail "opa check refused $call for another reason"; }
	echo "refused: $call"
done
rm "$tmp/bad/grantwire/impure.rego"

printf 'package grantwire.ugly\nx:=1\n' >"$tmp/bad/grantwire/ugly.rego"
if "${OPA[@]}" fmt --fail -l "$tmp/bad/grantwire" >"$tmp/out" 2>&1; then
	fail "opa fmt --fail accepted an unformatted module"
fi
grep -q "ugly.rego" "$tmp/out" || fail "opa fmt did not name the unformatted module"
echo "refused: an unformatted module"
rm "$tmp/bad/grantwire/ugly.rego"

# An untested rule lowers the coverage of the real tree below 100 %.
printf 'package grantwire.untested\n\n# METADATA\n# title: t\n# description: d\nt := 1 if input.x\n' >"$tmp/bad/grantwire/untested.rego"
if scripts/coverage.sh --policy "$tmp/bad/grantwire" --threshold 100 >"$tmp/out" 2>&1; then
	fail "scripts/coverage.sh accepted a module with an untested rule at threshold 100"
fi
grep -q "below the 100% threshold" "$tmp/out" || { cat "$tmp/out" >&2; fail "scripts/coverage.sh failed for another reason"; }
grep -q "untested.rego: lines 6" "$tmp/out" || { cat "$tmp/out" >&2; fail "scripts/coverage.sh did not name the untested line"; }
echo "refused: coverage below the threshold (an untested rule)"
# The Go tests of step 4 ran the METADATA and entrypoint checks on modules without METADATA
# and without entrypoints (TestMetadataCheckReportsWhatIsMissing,
# TestEntrypointCheckReportsWhatIsMissing) and the capabilities on impure builtins.

printf '\naudit: %d Rego tests passed (opa test, coverage >= %s%%); ok\n' "$rego_tests" "$THRESHOLD"
