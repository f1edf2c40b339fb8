package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// filteredEnv is the environment the MCP TypeScript SDK's stdio client gives the server
// it starts (getDefaultEnvironment: HOME, LOGNAME, PATH, SHELL, TERM, USER), nothing else.
func filteredEnv(home, path string) []string {
	return []string{"HOME=" + home, "PATH=" + path, "USER=gw-test", "SHELL=/bin/sh", "TERM=dumb", "LOGNAME=gw-test"}
}

// TestKeyringSessionFilteredEnvironment: a Secret Service started by
// scripts/keyring-session.sh is reached by grantwire started with only the six variables
// an MCP client like the TypeScript SDK's passes (issue 20 §1.14): the session writes its
// D-Bus address to ~/.cache/grantwire/keyring-session, grantwire reads it when
// DBUS_SESSION_BUS_ADDRESS is unset. configure stores the client's secret there, status
// reads it back (from the same private keyring, also when named by its address); a file
// others may write is refused, naming it; after stop the file is gone and grantwire says
// no Secret Service is reachable.
func TestKeyringSessionFilteredEnvironment(t *testing.T) {
	requireKeyring(t) // gnome-keyring is installed; the session is this test's own
	w := newBB(t)
	script, err := filepath.Abs("../../scripts/keyring-session.sh")
	require.NoError(t, err)
	path := filepath.Dir(w.bin) + ":" + os.Getenv("PATH")

	session := exec.Command("bash", script, "start")
	session.Env = []string{"HOME=" + w.home, "PATH=" + os.Getenv("PATH")}
	out, err := session.Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^export GRANTWIRE_KEYRING_SESSION=(\S+)$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "%s", out)
	stop := func() {
		cmd := exec.Command("bash", script, "stop")
		cmd.Env = []string{"HOME=" + w.home, "PATH=" + os.Getenv("PATH"), "GRANTWIRE_KEYRING_SESSION=" + m[1]}
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	file := filepath.Join(w.home, ".cache", "grantwire", "keyring-session")
	addr, err := os.ReadFile(file)
	require.NoError(t, err, "start writes the keyring session file")
	require.Contains(t, string(out), "export DBUS_SESSION_BUS_ADDRESS="+strings.TrimSpace(string(addr)))
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	run := func(env []string, stdin string, args ...string) bbResult {
		t.Helper()
		w.env = env
		return w.run(stdin, args...)
	}
	env := filteredEnv(w.home, path)
	secret := "filtered-env-secret-" + randHex(8)
	r := run(env, secret+"\n", "configure", "google", "--client-id", "filtered-client", "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout+r.stderr, secret)
	status := func(env []string) statusRow {
		t.Helper()
		r := run(env, "", "--json", "status", "google")
		require.Equal(t, 0, r.code, r.stderr)
		var doc statusDoc
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
		require.Len(t, doc.Connectors, 1)
		return doc.Connectors[0]
	}
	require.True(t, status(env).ClientConfigured, "the client's secret is in the session's keyring")
	named := append(filteredEnv(w.home, path), "DBUS_SESSION_BUS_ADDRESS="+strings.TrimSpace(string(addr)))
	require.True(t, status(named).ClientConfigured, "the same Secret Service, named by its address")

	// A file others may write could point grantwire at their Secret Service: refused.
	require.NoError(t, os.Chmod(file, 0o622))
	r = run(env, "", "status", "google")
	require.Equal(t, 5, r.code, r.stderr)
	require.Contains(t, r.stderr, file+" is writable by others (mode 0622)")
	require.NoError(t, os.Chmod(file, 0o600))

	stop()
	stopped = true
	_, err = os.Stat(file)
	require.ErrorIs(t, err, os.ErrNotExist, "stop removes the keyring session file")
	r = run(env, "", "status", "google")
	require.Equal(t, 5, r.code, r.stderr)
	require.Contains(t, r.stderr, "no D-Bus session bus")
}
