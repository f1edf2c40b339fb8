#!/usr/bin/env bash
# keyring-lib.sh: a private, headless Secret Service for grantwire's tests (source it).
#
#   . scripts/keyring-lib.sh
#   keyring_start || exit 1      # exports DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR, XDG_DATA_HOME
#   trap keyring_stop EXIT
#
# It starts its own dbus-daemon with its own bus configuration (no service activation, so
# nothing else can be spawned on it and both daemons have PIDs we stop), then
# gnome-keyring-daemon --unlock with a non-empty password against fresh XDG directories
# (a fresh login keyring every run), and waits until the login collection is published.
# keyring_ensure_installed installs gnome-keyring with apt-get when it is missing and this
# shell may do so (root with apt-get), and explains what to install otherwise.

keyring_ensure_installed() {
	if command -v gnome-keyring-daemon >/dev/null && command -v dbus-daemon >/dev/null && command -v dbus-send >/dev/null; then
		return 0
	fi
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "keyring: installing gnome-keyring (a private Secret Service for the tests)..." >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null &&
			apt-get install -y -qq --no-install-recommends dbus-daemon dbus-bin gnome-keyring >/dev/null || {
			echo "keyring: apt-get could not install gnome-keyring" >&2
			return 1
		}
		return 0
	fi
	echo "keyring: the real-keyring tests need a Secret Service: install dbus-daemon, dbus-bin and gnome-keyring" >&2
	echo "keyring:   Debian/Ubuntu: sudo apt-get install --no-install-recommends dbus-daemon dbus-bin gnome-keyring" >&2
	echo "keyring:   Fedora: sudo dnf install dbus-daemon gnome-keyring" >&2
	return 1
}

# KR_DATA_DIR, when set, holds the keyring files instead of a throwaway directory (a
# keyring kept across sessions: scripts/keyring-session.sh start --keep DIR).
keyring_start() {
	KR_TMP=$(mktemp -d -t grantwire-keyring.XXXXXX) || return 1
	mkdir -p "$KR_TMP/run" "$KR_TMP/data" && chmod 700 "$KR_TMP" "$KR_TMP/run" || return 1
	export XDG_RUNTIME_DIR="$KR_TMP/run" XDG_DATA_HOME="${KR_DATA_DIR:-$KR_TMP/data}"
	export DBUS_SESSION_BUS_ADDRESS="unix:path=$KR_TMP/run/bus"
	unset DISPLAY WAYLAND_DISPLAY
	cat >"$KR_TMP/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>$DBUS_SESSION_BUS_ADDRESS</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
CONF
	dbus-daemon --config-file="$KR_TMP/bus.conf" --nofork --nopidfile >"$KR_TMP/dbus.log" 2>&1 </dev/null &
	KR_DBUS_PID=$!
	local i
	for i in $(seq 100); do
		[ -S "$KR_TMP/run/bus" ] && break
		sleep 0.1
	done
	# A non-empty password: with an empty one gnome-keyring creates no login keyring.
	printf '%s' "${KEYRING_CI_PASSWORD:-grantwire-ci-keyring}" |
		gnome-keyring-daemon --foreground --unlock --components=secrets >"$KR_TMP/gkd.log" 2>&1 &
	KR_GKD_PID=$!
	for i in $(seq 100); do
		if dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets \
			org.freedesktop.DBus.Properties.Get string:org.freedesktop.Secret.Service string:Collections \
			2>/dev/null | grep -q /org/freedesktop/secrets/collection/login; then
			return 0
		fi
		sleep 0.1
	done
	echo "keyring_start: the Secret Service was not ready after 10 s" >&2
	cat "$KR_TMP/dbus.log" "$KR_TMP/gkd.log" >&2
	keyring_stop
	return 1
}

keyring_stop() {
	if [ -n "${KR_GKD_PID:-}" ]; then kill "$KR_GKD_PID" 2>/dev/null; wait "$KR_GKD_PID" 2>/dev/null; fi
	if [ -n "${KR_DBUS_PID:-}" ]; then kill "$KR_DBUS_PID" 2>/dev/null; wait "$KR_DBUS_PID" 2>/dev/null; fi
	if [ -n "${KR_TMP:-}" ]; then rm -rf "$KR_TMP"; fi
	KR_GKD_PID='' KR_DBUS_PID='' KR_TMP=''
	unset DBUS_SESSION_BUS_ADDRESS
	return 0
}
