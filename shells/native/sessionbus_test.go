//go:build unix

package native

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSessionBusFile: the keyring session file is used only when it is this user's own
// regular file, in a directory no one else may write, naming a live unix socket; every
// refusal names the file. XDG_CACHE_HOME's file comes before ~/.cache's.
func TestSessionBusFile(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".cache", "grantwire")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	file := filepath.Join(dir, sessionFileName)
	sock := filepath.Join(t.TempDir(), "bus")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	get := env(map[string]string{"HOME": home})

	addr, why := sessionBus(get)
	require.Empty(t, addr)
	require.Empty(t, why, "no file: nothing to say")

	require.NoError(t, os.WriteFile(file, []byte("unix:path="+sock+"\n"), 0o600))
	addr, _ = sessionBus(get)
	require.Equal(t, "unix:path="+sock, addr)

	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"tcp":       {"tcp:host=127.0.0.1,port=1", 0o600, "names no unix socket address"},
		"gone":      {"unix:path=" + filepath.Join(home, "nothing"), 0o600, "names a bus that is gone"},
		"writable":  {"unix:path=" + sock, 0o666, "is writable by others (mode 0666)"},
		"too large": {"unix:path=" + sock + "\n" + string(make([]byte, 5000)), 0o600, "is over 4 KiB"},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(file, []byte(c.content), 0o600))
			require.NoError(t, os.Chmod(file, c.mode))
			addr, why := sessionBus(get)
			require.Empty(t, addr)
			require.Len(t, why, 1)
			require.Contains(t, why[0], file)
			require.Contains(t, why[0], c.want)
		})
	}

	// A link is not followed, and a directory others may write is refused.
	real := filepath.Join(home, "real")
	require.NoError(t, os.WriteFile(real, []byte("unix:path="+sock), 0o600))
	require.NoError(t, os.Remove(file))
	require.NoError(t, os.Symlink(real, file))
	_, why = sessionBus(get)
	require.Contains(t, why[0], "is not a regular file")
	require.NoError(t, os.Remove(file))
	require.NoError(t, os.WriteFile(file, []byte("unix:path="+sock), 0o600))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, why = sessionBus(get)
	require.Contains(t, why[0], dir+" is writable by others")
	require.NoError(t, os.Chmod(dir, 0o700))

	// XDG_CACHE_HOME's file first.
	xdg := filepath.Join(t.TempDir(), "grantwire")
	require.NoError(t, os.MkdirAll(xdg, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(xdg, sessionFileName), []byte("unix:abstract=/tmp/x"), 0o600))
	addr, _ = sessionBus(env(map[string]string{"HOME": home, "XDG_CACHE_HOME": filepath.Dir(xdg)}))
	require.Equal(t, "unix:abstract=/tmp/x", addr)
}
