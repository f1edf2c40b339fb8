package native

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The keyring session file: scripts/keyring-session.sh writes the D-Bus address of the
// session bus it starts to <user cache dir>/grantwire/keyring-session (and, when
// XDG_CACHE_HOME names another directory, to ~/.cache/grantwire/keyring-session as well),
// and removes it on stop. grantwire reads it when DBUS_SESSION_BUS_ADDRESS is unset, so an
// MCP client that starts grantwire with a filtered environment (the MCP TypeScript SDK's
// stdio client passes only HOME, PATH, USER, SHELL, TERM and LOGNAME) still reaches the
// session's Secret Service (docs/behaviour.md#keyring-session-file).
//
// Whoever can write the file chooses the Secret Service that receives grantwire's
// secrets, so it is read only when it is a regular file (not a link) of at most 4 KiB,
// owned by this user and writable by no one else, in a directory of this user writable by
// no one else, and names a unix socket (unix:path= an existing socket, or unix:abstract=).
const sessionFileName = "keyring-session"

// sessionFiles are the places the session file is looked for, in order.
func sessionFiles(getenv func(string) string) []string {
	var out []string
	if c := getenv("XDG_CACHE_HOME"); c != "" && filepath.IsAbs(c) {
		out = append(out, filepath.Join(c, "grantwire", sessionFileName))
	}
	if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
		if p := filepath.Join(h, ".cache", "grantwire", sessionFileName); len(out) == 0 || out[0] != p {
			out = append(out, p)
		}
	}
	return out
}

// sessionBus is the address in the first session file that passes the checks; else "" and
// why each file found was not used (nil when there was none).
func sessionBus(getenv func(string) string) (string, []string) {
	var why []string
	for _, p := range sessionFiles(getenv) {
		addr, err := readSessionFile(p)
		if err == nil {
			return addr, nil
		}
		if !os.IsNotExist(err) {
			why = append(why, err.Error())
		}
	}
	return "", why
}

func readSessionFile(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", p)
	}
	if err := ownedPrivate(p, fi); err != nil {
		return "", err
	}
	di, err := os.Stat(filepath.Dir(p))
	if err != nil {
		return "", err
	}
	if err := ownedPrivate(filepath.Dir(p), di); err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", err
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("%s is over 4 KiB", p)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	addr := strings.TrimSpace(string(line))
	kind, rest, ok := strings.Cut(addr, ":")
	if !ok || kind != "unix" {
		return "", fmt.Errorf("%s names no unix socket address", p)
	}
	for _, kv := range strings.Split(rest, ",") {
		if path, ok := strings.CutPrefix(kv, "path="); ok {
			si, err := os.Stat(path)
			if err != nil || si.Mode()&os.ModeSocket == 0 {
				return "", fmt.Errorf("%s names a bus that is gone (%s): the session stopped without `keyring-session.sh stop`; start one again", p, path)
			}
			return addr, nil
		}
		if strings.HasPrefix(kv, "abstract=") {
			return addr, nil
		}
	}
	return "", fmt.Errorf("%s names no unix socket address", p)
}
