#!/usr/bin/env bash
# Runs grantwire's benchmarks (BENCHMARKS.md says what each measures) and summarises them
# with benchstat. Every benchmark runs BENCH_COUNT times (default 6) so benchstat can give
# medians and confidence intervals; raw results and the machine's description go to
# BENCH_OUT (default bench-results/). BENCH narrows the benchmarks (a -bench regexp),
# BENCHTIME sets -benchtime.
#   scripts/bench.sh                       # everything (about 25 minutes on 2 cores)
#   BENCH='Gate|Parallel' BENCH_COUNT=10 scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench-results}
count=${BENCH_COUNT:-6}
filter=${BENCH:-.}
benchtime=${BENCHTIME:-1s}
mkdir -p "$out"
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	go version
	lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|Flags)' | cut -c1-160
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.txt"
run() { # package, file
	go test "$1" -run '^$' -bench "$filter" -benchtime "$benchtime" -count "$count" -timeout 90m | tee "$out/$2.txt"
}
run ./internal/testworld/nodiff engines
run ./core/wasmengine wasmengine
run ./internal/jsonx canon
run ./cmd/grantwire cli # the built binary as a process (BenchmarkBinaryGrantsList) and whole commands in-process
run ./core/opaserver opaserver
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
cat "$out/machine.txt"
for f in engines wasmengine canon cli opaserver; do
	go tool benchstat "$out/$f.txt" | tee "$out/$f.benchstat"
done
# Engines side by side: one column per engine.
go tool benchstat -col /engine "$out/engines.txt" | tee "$out/engines-by-engine.benchstat"
