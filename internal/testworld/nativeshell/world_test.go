package nativeshell_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/engines"
	"github.com/grantwire/grantwire/internal/testworld/nativeshell"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// childEnv makes the test binary a child process that tries a lock file and exits 0
// (acquired) or 3 (held by someone else).
const childEnv = "GRANTWIRE_NATIVESHELL_PROBE_LOCK"

func TestMain(m *testing.M) {
	if p := os.Getenv(childEnv); p != "" {
		ok, err := flock.New(p).TryLock()
		switch {
		case err != nil:
			os.Exit(2)
		case !ok:
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probeLock reports whether another OS process can take the lock file at p.
func probeLock(t *testing.T, p string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+p)
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		return false
	}
	require.NoError(t, err)
	return true
}

func newWorld(t *testing.T) *nativeshell.World {
	t.Helper()
	ctx := context.Background()
	sh := shell(t, "wasm", engines.Wasm)
	cat, err := catalog.Load(conformance.BaseCatalog)
	require.NoError(t, err)
	eng, err := sh.Engine(ctx, cat.Data())
	require.NoError(t, err)
	w, err := sh.NewWorld(ctx, t, conformance.Setup{Start: time.UnixMilli(conformance.DefaultClock), Catalog: cat, Engine: eng})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w.(*nativeshell.World)
}

// A lock held by another process of the world is a real file lock: another OS process
// cannot take it either; a process of the world is told busy after KnownBusyWait instead
// of the 30 s it asked for; released, the lock is free for everyone.
func TestOutsideHoldersHoldRealFileLocks(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	require.NoError(t, w.Hold("google", "other-process"))
	p := filepath.Join(w.Home(), "connectors", "google.lock")
	require.False(t, probeLock(t, p), "another OS process sees the lock held")

	a, err := w.ProcessCapabilities("A")
	require.NoError(t, err)
	begin := time.Now()
	_, err = a.Locks.TryLock(ctx, "google", 30*time.Second)
	require.ErrorIs(t, err, hostabi.ErrBusy)
	require.Less(t, time.Since(begin), 5*time.Second, "a known holder answers busy after KnownBusyWait")

	require.NoError(t, w.Release("google"))
	require.True(t, probeLock(t, p))
	release, err := a.Locks.TryLock(ctx, "google", time.Second)
	require.NoError(t, err)
	require.False(t, probeLock(t, p), "process A's lock is a file lock too")
	release()
}

// The world shows grantwire the service grantwire.connections, stores it under a name of
// its own (never touching a real installation's entries), lists its entries from the
// Secret Service with chunk parts folded, and deletes them when it closes.
func TestTheWorldKeepsItsKeyringToItself(t *testing.T) {
	requireKeyring(t)
	ctx := context.Background()
	w := newWorld(t)
	caps := w.Capabilities()
	require.Equal(t, hostabi.DefaultService, caps.Service)
	require.NoError(t, caps.Keyring.Set(ctx, caps.Service, "nativeshell-probe:default", "small"))
	big := strings.Repeat("0123456789", 300) // 3,000 characters: three parts and a manifest
	require.NoError(t, caps.Keyring.Set(ctx, caps.Service, "provider:nativeshell-probe", big))

	_, err := gokeyring.Get(hostabi.DefaultService, "nativeshell-probe:default")
	require.ErrorIs(t, err, gokeyring.ErrNotFound, "nothing is stored under the real service name")
	require.ElementsMatch(t, []string{"nativeshell-probe:default", "provider:nativeshell-probe"}, w.KeyringUsers(caps.Service))

	b, err := w.ProcessCapabilities("B")
	require.NoError(t, err)
	got, err := b.Keyring.Get(ctx, b.Service, "provider:nativeshell-probe")
	require.NoError(t, err)
	require.Equal(t, big, got, "another process reads the chunked value back")

	surfaces, err := w.Surfaces()
	require.NoError(t, err)
	var names []string
	for _, s := range surfaces {
		names = append(names, s.Name)
		require.NotContains(t, s.Text, "0123456789", "a surface shows a secret")
	}
	require.Contains(t, names, "keyring item nativeshell-probe:default")
	require.Contains(t, names, "keyring item provider:nativeshell-probe#0", "every item is checked, parts too")

	require.NoError(t, caps.Keyring.Set(ctx, caps.Service, "p:default", "v"))
	require.NoError(t, w.FailKeyring("get", "p:default", 1, false))
	_, err = caps.Keyring.Get(ctx, caps.Service, "p:default")
	require.ErrorIs(t, err, testenv.ErrInjected)
	require.NoError(t, w.FailKeyring("set", "p:default", 1, true))
	err = b.Keyring.Set(ctx, b.Service, "p:default", "w")
	var ce *hostabi.HostError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "INSECURE_STORE", ce.Code)
	require.Contains(t, ce.Fix, "install")
	got, err = caps.Keyring.Get(ctx, caps.Service, "p:default")
	require.NoError(t, err)
	require.Equal(t, "v", got, "failures are used up, and nothing was written")

	require.NoError(t, w.Close())
	require.Empty(t, w.KeyringUsers(caps.Service), "the world's entries are deleted when it closes")
}

// Files the world finds with the wrong mode are reported.
func TestSurfacesCheckModes(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	caps := w.Capabilities()
	require.NoError(t, caps.Files.Update(ctx, layout.Grants, func([]byte, string) ([]byte, error) { return []byte("{}\n"), nil }))
	_, err := w.Surfaces()
	require.NoError(t, err)
	require.NoError(t, os.Chmod(caps.Files.Path(layout.Grants), 0o644))
	_, err = w.Surfaces()
	require.ErrorContains(t, err, "has mode 0644, want 0600")
}
