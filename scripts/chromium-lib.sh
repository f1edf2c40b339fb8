#!/usr/bin/env bash
# chromium-lib.sh: a headless Chromium for the tests of the Connectors page (source it).
#
#   . scripts/chromium-lib.sh
#   chromium_ensure_installed || exit 1   # exports GRANTWIRE_CHROMIUM
#
# It installs Debian's chromium package with apt-get when no Chromium or Chrome is found
# and this shell may do so (root with apt-get), as scripts/keyring-lib.sh does for
# gnome-keyring, and explains what to install otherwise. The browser tests
# (surfaces/rest, TestPageInARealBrowser) run the binary named by GRANTWIRE_CHROMIUM.

chromium_find() {
	local c
	for c in "${GRANTWIRE_CHROMIUM:-}" chromium chromium-browser google-chrome-stable google-chrome; do
		[ -n "$c" ] && command -v "$c" >/dev/null && { command -v "$c"; return 0; }
	done
	return 1
}

chromium_ensure_installed() {
	local path
	if path=$(chromium_find); then
		export GRANTWIRE_CHROMIUM=$path
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "chromium: installing Debian's chromium (a headless browser for the page's tests)..." >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null &&
			apt-get install -y -qq --no-install-recommends chromium >/dev/null || {
			echo "chromium: apt-get could not install chromium" >&2
			return 1
		}
		path=$(chromium_find) || return 1
		export GRANTWIRE_CHROMIUM=$path
		return 0
	fi
	echo "chromium: the page's browser tests need Chromium or Chrome" >&2
	echo "chromium:   Debian/Ubuntu: sudo apt-get install --no-install-recommends chromium" >&2
	echo "chromium:   or set GRANTWIRE_CHROMIUM to a Chrome/Chromium binary" >&2
	return 1
}
