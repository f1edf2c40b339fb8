package main_test

// The first hour of a new user (issue 11), on the real parts: homes that do not share
// secrets, read-only commands that create nothing, disconnecting what was never
// configured, and grantwire on a machine without a desktop session (the Secret Service of
// scripts/keyring-session.sh, also reached with an MCP client's filtered environment).

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/shells/native"
)

// keyringWorld is a bbWorld on the test's private Secret Service with no keyring service
// set: the CLI derives it from the home.
func keyringWorld(t *testing.T) *bbWorld {
	t.Helper()
	requireKeyring(t)
	w := newBB(t)
	w.env = append(w.env,
		"DBUS_SESSION_BUS_ADDRESS="+os.Getenv("DBUS_SESSION_BUS_ADDRESS"),
		"XDG_RUNTIME_DIR="+os.Getenv("XDG_RUNTIME_DIR"),
	)
	return w
}

func statusOf(t *testing.T, w *bbWorld, args ...string) statusDoc {
	t.Helper()
	var doc statusDoc
	w.runJSON(&doc, append([]string{"status"}, args...)...)
	return doc
}

// Two homes never share secrets unless told to: each home other than ~/.grantwire has its
// own keyring service; an explicit --keyring-service shares (as with GAIA).
func TestE2EHomesDoNotShareSecrets(t *testing.T) {
	w := keyringWorld(t)
	homeA, homeB := filepath.Join(w.home, "a"), filepath.Join(w.home, "b")
	pat := "ghp_home_a_" + randHex(8)
	svcA, svcB := native.ServiceFor(homeA, w.home), native.ServiceFor(homeB, w.home)
	shared := "grantwire.test.shared." + randHex(4)
	t.Cleanup(func() {
		for _, s := range []string{svcA, svcB, shared} {
			_ = gokeyring.DeleteAll(s)
		}
	})
	require.NotEqual(t, svcA, svcB)

	r := w.run("GITHUB_PERSONAL_ACCESS_TOKEN="+pat+"\n", "--home", homeA, "configure", "mcp-github", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	a := statusOf(t, w, "--home", homeA, "mcp-github")
	require.Equal(t, svcA, a.Service)
	require.Equal(t, homeA, a.Home)
	require.True(t, a.Connectors[0].Configured)
	v, err := gokeyring.Get(svcA, layout.MCPUser("mcp-github", "GITHUB_PERSONAL_ACCESS_TOKEN"))
	require.NoError(t, err)
	require.Equal(t, pat, v, "stored under home a's own service")

	clientSecret := "home-a-client-secret-" + randHex(8)
	r = w.run(clientSecret+"\n", "--home", homeA, "configure", "google", "--client-id", "cid-a", "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, statusOf(t, w, "--home", homeA, "google").Connectors[0].ClientConfigured)

	b := statusOf(t, w, "--home", homeB, "google")
	require.Equal(t, svcB, b.Service)
	require.False(t, b.Connectors[0].ClientConfigured, "home b sees nothing of home a's credential store entries")
	_, err = gokeyring.Get(svcB, layout.MCPUser("mcp-github", "GITHUB_PERSONAL_ACCESS_TOKEN"))
	require.ErrorIs(t, err, gokeyring.ErrNotFound)

	// The default home (~/.grantwire, the environment's GRANTWIRE_HOME aside) keeps the
	// default service, so existing installations keep their secrets.
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "GRANTWIRE_HOME=") {
			env = append(env, kv)
		}
	}
	w.env = env
	def := statusOf(t, w, "mcp-github")
	require.Equal(t, hostabi.DefaultService, def.Service)
	require.Equal(t, filepath.Join(w.home, ".grantwire"), def.Home)

	// Sharing is explicit: the same --keyring-service (or GRANTWIRE_KEYRING_SERVICE) in
	// two homes, as a GAIA installation is shared.
	r = w.run(clientSecret+"\n", "--home", homeA, "--keyring-service", shared, "configure", "google", "--client-id", "cid-a", "--client-secret-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	w.env = append(w.env, "GRANTWIRE_KEYRING_SERVICE="+shared)
	b = statusOf(t, w, "--home", homeB, "google")
	require.Equal(t, shared, b.Service)
	require.True(t, b.Connectors[0].ClientConfigured, "the same service: the client is shared")
}

// Read-only commands create nothing in the home: no directory, no file.
func TestE2EReadOnlyCommandsCreateNothing(t *testing.T) {
	w := keyringWorld(t)
	home := filepath.Join(w.home, ".grantwire")
	for _, args := range [][]string{
		{"status"}, {"status", "google"}, {"--json", "status"}, {"list"},
		{"grants", "list"}, {"activations", "list"}, {"mcp", "list"}, {"mcp", "list", "--agent", "builtin:chat"},
		{"agents", "list"}, {"catalog"}, {"catalog", "google"}, {"version"}, {"test", "google"},
	} {
		r := w.run("", args...)
		require.Contains(t, []int{0, 4}, r.code, "%v: %s", args, r.stderr)
		_, err := os.Stat(home)
		require.True(t, errors.Is(err, fs.ErrNotExist), "%v created %s", args, home)
	}
}

// Disconnecting what was never configured says so and succeeds.
func TestE2EDisconnectWhatWasNeverConfigured(t *testing.T) {
	w := keyringWorld(t)
	svc := "grantwire.test." + randHex(6)
	t.Cleanup(func() { _ = gokeyring.DeleteAll(svc) })
	w.env = append(w.env, "GRANTWIRE_KEYRING_SERVICE="+svc)
	for id, want := range map[string]string{
		"google":     "google is not connected: nothing to remove.\n",
		"mcp-github": "mcp-github is not configured: nothing to remove.\n",
	} {
		r := w.run("", "disconnect", id)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want, r.stdout)
		require.Empty(t, r.stderr)
		r = w.run("", "--json", "disconnect", id)
		require.Equal(t, 0, r.code, r.stderr)
		require.JSONEq(t, `{"connector": "`+id+`", "removed": false, "revoked_grants": [], "deactivated": [], "revoked_at_provider": false, "warnings": []}`, r.stdout)
	}
}

// grantwire without a desktop session: scripts/keyring-session.sh starts a Secret Service
// once, it serves several commands (configure, then status remembers the client), and
// stops; with --keep DIR the keyring survives a stop and the next start.
func TestHeadlessKeyringSession(t *testing.T) {
	requireKeyring(t) // gnome-keyring is installed (make test); the session is this test's own
	w := newBB(t)
	script, err := filepath.Abs("../../scripts/keyring-session.sh")
	require.NoError(t, err)
	bin := filepath.Dir(w.bin)
	secret := "headless-client-secret-" + randHex(8)
	// The README's recipe, as a user types it (grantwire on PATH).
	recipe := `set -e
eval "$("$SCRIPT" start $KEEP)"
printf '%s\n' "$SECRET" | grantwire configure google --client-id headless-client --client-secret-stdin
grantwire status google
grantwire --json status google > "$OUT"
"$SCRIPT" status
printf '%s\n' "$GRANTWIRE_KEYRING_SESSION" > "$SESSION"
eval "$("$SCRIPT" stop)"
test -z "${DBUS_SESSION_BUS_ADDRESS:-}"
`
	keepFlag := func(dir string) string {
		if dir == "" {
			return ""
		}
		return "--keep " + dir
	}
	run := func(keep string, script2 string) (string, statusRow, string) {
		t.Helper()
		out := filepath.Join(w.home, "status.json")
		session := filepath.Join(w.home, "session")
		cmd := exec.Command("bash", "-c", script2)
		cmd.Env = append(w.env, "PATH="+bin+":"+os.Getenv("PATH"), "SCRIPT="+script, "SECRET="+secret,
			"OUT="+out, "SESSION="+session, "KEEP="+keepFlag(keep),
			"GRANTWIRE_KEYRING_PASSWORD_FILE="+filepath.Join(w.home, "password"))
		cmd.Dir = w.home
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		require.NotContains(t, string(b), secret)
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		var doc statusDoc
		require.NoError(t, json.Unmarshal(raw, &doc), "%s", raw)
		require.Len(t, doc.Connectors, 1)
		dir, err := os.ReadFile(session)
		require.NoError(t, err)
		return string(b), doc.Connectors[0], strings.TrimSpace(string(dir))
	}
	gone := func(dir string) {
		t.Helper()
		_, err := os.Stat(dir)
		require.True(t, errors.Is(err, fs.ErrNotExist), "stop removes the session directory %s", dir)
		out, _ := exec.Command("pgrep", "-f", dir).Output()
		require.Empty(t, strings.TrimSpace(string(out)), "stop ends the session's daemons")
	}

	// A throwaway keyring: configure, then status in the same session remembers the client.
	out, row, dir := run("", recipe)
	require.True(t, row.ClientConfigured, "status remembers the client configured before it")
	require.Regexp(t, `(?m)^google\s+oauth_pkce\s+not connected\s+client configured`, out)
	require.Contains(t, out, "keyring-session: running")
	gone(dir)

	// A kept keyring: the client survives a stop and a new start.
	require.NoError(t, os.WriteFile(filepath.Join(w.home, "password"), []byte("a keyring password\n"), 0o600))
	keep := filepath.Join(w.home, "keyring")
	_, row, dir = run(keep, recipe)
	require.True(t, row.ClientConfigured)
	gone(dir)
	fi, err := os.Stat(keep)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o700), fi.Mode().Perm())
	again := `set -e
eval "$("$SCRIPT" start $KEEP)"
grantwire --json status google > "$OUT"
printf '%s\n' "$GRANTWIRE_KEYRING_SESSION" > "$SESSION"
eval "$("$SCRIPT" stop)"
`
	_, row, dir = run(keep, again)
	require.True(t, row.ClientConfigured, "the kept keyring still holds the client after stop and start")
	gone(dir)

	// Without a session: stop says so, status exits 1.
	cmd := exec.Command(script, "status")
	cmd.Env = w.env
	require.Error(t, cmd.Run())
	cmd = exec.Command(script, "stop")
	cmd.Env = w.env
	b, err := cmd.CombinedOutput()
	require.NoError(t, err)
	require.Contains(t, string(b), "no session to stop")
}

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
