#!/usr/bin/env bash
# Measures how much the tree repeats itself (issue 19's measure) with the `duplicates` tool:
# the pairs of places that share six or more identical or same-shape lines, counted twice —
# as the tool reads the tree, and with every Go import block blanked (line numbers kept),
# because two unrelated files that import the same six standard-library packages in sorted
# order make a pair no refactoring removes. Needs `duplicates` on PATH; reads a copy of the
# tracked files and writes nothing in the checkout.
#   scripts/repetition.sh            # the two counts
#   scripts/repetition.sh --most 200 # and the rows of both
set -euo pipefail
cd "$(dirname "$0")/.."
command -v duplicates >/dev/null || { echo "repetition: the duplicates tool is not on PATH" >&2; exit 2; }
most=${2:-0}
[ "${1:-}" = --most ] || most=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
	[ -f "$f" ] && mkdir -p "$tmp/$(dirname "$f")" && cp "$f" "$tmp/$f"
done
run() { if [ "$most" -gt 0 ]; then duplicates --seconds 300 --most "$most"; else duplicates --seconds 300 | head -1; fi; }
echo "as read:            $(cd "$tmp" && git init -q && git add -A && run | head -1)"
[ "$most" -gt 0 ] && (cd "$tmp" && run | tail -n +2)
find "$tmp" -name '*.go' -print0 | xargs -0 perl -0pi -e 's{^import \((.*?)^\)}{my $b=$1; $b=~s/[^\n]//g; "\n".$b."\n"}gmse'
echo "import blocks blank: $(cd "$tmp" && git add -A && run | head -1)"
[ "$most" -gt 0 ] && (cd "$tmp" && run | tail -n +2)
exit 0
