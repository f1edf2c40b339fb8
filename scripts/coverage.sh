#!/usr/bin/env bash
# Runs the policy's unit tests (opa test --coverage) and fails when the policy's line
# coverage (test files excluded) is below the threshold. The JSON report is read with OPA
# itself, so nothing but Go and the pinned OPA is needed.
#
#   scripts/coverage.sh [--threshold PERCENT] [--policy DIR] [--report FILE]
#
# --threshold defaults to $COVERAGE_THRESHOLD or 95; --policy to policy/grantwire. --report
# judges an existing `opa test --coverage --format json` report instead of running the
# tests. The audit's self-test uses both to prove that a low figure fails.
set -euo pipefail
threshold=${COVERAGE_THRESHOLD:-95}
report=""
dir=policy/grantwire
while (($#)); do
	case "$1" in
	--threshold) threshold=$2; shift 2 ;;
	--policy) dir=$2; shift 2 ;;
	--report) report=$2; shift 2 ;;
	*) echo "coverage: unknown argument $1 (usage: scripts/coverage.sh [--threshold PERCENT] [--policy DIR] [--report FILE])" >&2; exit 2 ;;
	esac
done
abs() { if [[ "$1" == /* ]]; then echo "$1"; else echo "$PWD/$1"; fi; }
[[ -z "$report" ]] || report=$(abs "$report")
[[ "$dir" == policy/grantwire ]] || dir=$(abs "$dir")
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ -z "$report" ]]; then
	report=$tmp/report.json
	# Each test takes well under a second, but coverage tracing on a busy 2-core machine can
	# stretch one past OPA's default 5 s deadline; 60 s keeps the run from flaking. A test
	# named todo_* (a known policy bug, written as the correct behaviour) is skipped, and
	# --exit-zero-on-skipped keeps a skip from failing the run; failures still fail it.
	if ! go tool opa test --coverage --fail-on-empty --exit-zero-on-skipped --timeout 60s --format json "$dir" >"$report"; then
		cat "$report" >&2
		echo "coverage: opa test failed (above); no coverage figure" >&2
		exit 1
	fi
fi

cat >"$tmp/coverage.rego" <<'EOF'
package coverage

# input: the JSON report of `opa test --coverage`. Test files are not the policy.
files := {f: v | some f, v in input.files; not endswith(f, "_test.rego")}

_package(f) := concat("/", array.slice(parts, 0, count(parts) - 1)) if parts := split(f, "/")

_count(v, k) := object.get(v, k, 0)

packages[p] := {"covered": c, "lines": c + m} if {
	some f, _ in files
	p := _package(f)
	c := sum([_count(v, "covered_lines") | some g, v in files; _package(g) == p])
	m := sum([_count(v, "not_covered_lines") | some g, v in files; _package(g) == p])
}

covered := sum([_count(v, "covered_lines") | some v in files])

lines := covered + sum([_count(v, "not_covered_lines") | some v in files])

# Hundredths of a percent, rounded down, so 94.999 never prints as 95.00.
_pct(c, n) := sprintf("%d.%02d", [floor(x / 100), x % 100]) if {
	n > 0
	x := floor((c * 10000) / n)
} else := "0.00"

percent := _pct(covered, lines)

_ranges(v) := concat(", ", [r |
	some x in object.get(v, "not_covered", [])
	r := _range(x.start.row, x.end.row)
])

_range(a, a) := format_int(a, 10)

_range(a, b) := sprintf("%d-%d", [a, b]) if a != b

report := concat("\n", array.concat(
	array.concat(
		[sprintf("%-48s %6s %8s", ["package (policy lines, tests excluded)", "lines", "covered"])],
		[sprintf("%-48s %6d %7s%%", [p, v.lines, _pct(v.covered, v.lines)]) | some p, v in packages],
	),
	array.concat(
		[sprintf("%-48s %6d %7s%%", ["total", lines, percent])],
		[sprintf("  not covered in %s: lines %s", [f, _ranges(v)]) | some f, v in files; _count(v, "not_covered_lines") > 0],
	),
))
EOF

opa_eval() { go tool opa eval --format raw --data "$tmp/coverage.rego" --input "$report" "$1"; }
if [[ "$(opa_eval 'data.coverage.lines')" == "0" ]]; then
	echo "coverage: the report holds no policy lines; is $dir empty?" >&2
	exit 1
fi
opa_eval 'data.coverage.report'
echo
percent=$(opa_eval 'data.coverage.percent')
if awk -v p="$percent" -v t="$threshold" 'BEGIN { exit !(p + 0 < t + 0) }'; then
	echo "coverage: FAIL: the policy's line coverage is ${percent}%, below the ${threshold}% threshold; add tests for the lines listed above" >&2
	exit 1
fi
echo "coverage: ok: ${percent}% of policy lines covered (threshold ${threshold}%)"
