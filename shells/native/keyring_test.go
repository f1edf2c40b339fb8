package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

const sentinel = "\x00gaia-chunked\x00"

// newKeyringShell is the keyring of a shell on the real Secret Service (the test is
// skipped without one) and a service of the test's own.
func newKeyringShell(t *testing.T, tweak func(*native.Options)) (hostabi.Keyring, string) {
	t.Helper()
	requireKeyring(t)
	svc := testService(t)
	o := native.Options{Home: t.TempDir(), Service: svc, NoWatch: true}
	if tweak != nil {
		tweak(&o)
	}
	sh, err := native.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sh.Close() })
	return sh.Capabilities().Keyring, svc
}

func TestKeyringRoundTrip(t *testing.T) {
	ctx := context.Background()
	kr, svc := newKeyringShell(t, nil)

	_, err := kr.Get(ctx, svc, "local:default")
	require.ErrorIs(t, err, hostabi.ErrNotFound)
	require.NoError(t, kr.Delete(ctx, svc, "local:default"), "deleting nothing succeeds")

	require.NoError(t, kr.Set(ctx, svc, "local:default", `{"refresh_token":"r1"}`))
	v, err := kr.Get(ctx, svc, "local:default")
	require.NoError(t, err)
	require.Equal(t, `{"refresh_token":"r1"}`, v)
	raw, err := gokeyring.Get(svc, "local:default")
	require.NoError(t, err)
	require.Equal(t, v, raw, "a small value is stored raw in one slot (GAIA's layout)")

	require.NoError(t, kr.Set(ctx, svc, "local:default", "r2"))
	v, err = kr.Get(ctx, svc, "local:default")
	require.NoError(t, err)
	require.Equal(t, "r2", v)

	require.NoError(t, kr.Delete(ctx, svc, "local:default"))
	_, err = kr.Get(ctx, svc, "local:default")
	require.ErrorIs(t, err, hostabi.ErrNotFound)
	require.NoError(t, kr.Delete(ctx, svc, "local:default"))

	// Services are separate namespaces.
	other := testService(t)
	require.NoError(t, kr.Set(ctx, svc, "u", "a"))
	_, err = kr.Get(ctx, other, "u")
	require.ErrorIs(t, err, hostabi.ErrNotFound)
}

func storedParts(t *testing.T, svc, user string) []string {
	t.Helper()
	var parts []string
	for i := 0; ; i++ {
		p, err := gokeyring.Get(svc, fmt.Sprintf("%s#%d", user, i))
		if errors.Is(err, gokeyring.ErrNotFound) {
			return parts
		}
		require.NoError(t, err)
		parts = append(parts, p)
	}
}

func TestKeyringChunksLargeValues(t *testing.T) {
	ctx := context.Background()
	kr, svc := newKeyringShell(t, nil)
	const user = "microsoft:default"

	cases := []struct {
		name  string
		value string
		parts int
	}{
		{"exactly 1024 characters stays raw", strings.Repeat("a", 1024), 0},
		{"1025 characters", strings.Repeat("b", 1025), 2},
		{"5000 characters", strings.Repeat("0123456789", 500), 5},
		{"multi-byte characters stay under the byte limit", strings.Repeat("é", 1500), 2},
		{"4-byte characters", strings.Repeat("😀", 700), 2},
		{"a value that looks like a manifest", sentinel + "3:deadbeef", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, kr.Set(ctx, svc, user, c.value))
			got, err := kr.Get(ctx, svc, user)
			require.NoError(t, err)
			require.Equal(t, c.value, got)
			parts := storedParts(t, svc, user)
			require.Len(t, parts, c.parts)
			base, err := gokeyring.Get(svc, user)
			require.NoError(t, err)
			if c.parts == 0 {
				require.Equal(t, c.value, base)
				return
			}
			require.Equal(t, fmt.Sprintf("%s%d:%08x", sentinel, c.parts, crc32.ChecksumIEEE([]byte(c.value))), base)
			require.Equal(t, c.value, strings.Join(parts, ""))
			for _, p := range parts {
				require.LessOrEqual(t, len(p), 2048, "every part fits the smallest platform limit (Windows: 2,560 bytes)")
				require.LessOrEqual(t, len([]rune(p)), 1024)
			}
		})
	}

	// Shrinking sweeps the parts a longer value left behind; deleting removes every part.
	require.NoError(t, kr.Set(ctx, svc, user, strings.Repeat("x", 5000)))
	require.Len(t, storedParts(t, svc, user), 5)
	require.NoError(t, kr.Set(ctx, svc, user, strings.Repeat("y", 2000)))
	require.Len(t, storedParts(t, svc, user), 2)
	require.NoError(t, kr.Set(ctx, svc, user, "short"))
	require.Empty(t, storedParts(t, svc, user))
	require.NoError(t, kr.Set(ctx, svc, user, strings.Repeat("z", 3000)))
	require.NoError(t, kr.Delete(ctx, svc, user))
	require.Empty(t, storedParts(t, svc, user))
	_, err := gokeyring.Get(svc, user)
	require.ErrorIs(t, err, gokeyring.ErrNotFound)
}

// A rewrite that crashed between parts, a missing part or a bad manifest reads as absent,
// never as a truncated value.
func TestKeyringTornValueReadsAbsent(t *testing.T) {
	ctx := context.Background()
	kr, svc := newKeyringShell(t, nil)
	const user = "microsoft:default"
	oldValue := strings.Repeat("o", 3000)
	newValue := strings.Repeat("n", 3000)

	require.NoError(t, kr.Set(ctx, svc, user, oldValue))
	// A writer of newValue crashed after its first part: the old manifest now describes
	// one new part and two old ones.
	require.NoError(t, gokeyring.Set(svc, user+"#0", newValue[:1024]))
	_, err := kr.Get(ctx, svc, user)
	require.ErrorIs(t, err, hostabi.ErrNotFound)

	// A missing part.
	require.NoError(t, kr.Set(ctx, svc, user, oldValue))
	require.NoError(t, gokeyring.Delete(svc, user+"#2"))
	_, err = kr.Get(ctx, svc, user)
	require.ErrorIs(t, err, hostabi.ErrNotFound)

	// Malformed manifests.
	for _, m := range []string{sentinel, sentinel + "x:00000000", sentinel + "0:00000000", sentinel + "3:zz"} {
		require.NoError(t, gokeyring.Set(svc, user, m))
		_, err = kr.Get(ctx, svc, user)
		require.ErrorIs(t, err, hostabi.ErrNotFound, "%q", m)
	}

	// Through the Host: a torn connection blob is "not connected", not a broken token.
	require.NoError(t, kr.Set(ctx, svc, user, oldValue))
	require.NoError(t, gokeyring.Set(svc, user+"#1", newValue[:1024]))
	_, err = kr.Get(ctx, svc, user)
	require.ErrorIs(t, err, hostabi.ErrNotFound)
}

// Values written by GAIA (parts, then a manifest with a CRC; or an older manifest without
// one) read back whole.
func TestKeyringReadsGAIAChunks(t *testing.T) {
	ctx := context.Background()
	kr, svc := newKeyringShell(t, nil)
	const user = "google:default"
	value := `{"refresh_token":"` + strings.Repeat("G", 2500) + `"}`
	parts := []string{value[:1024], value[1024:2048], value[2048:]}
	for i, p := range parts {
		require.NoError(t, gokeyring.Set(svc, fmt.Sprintf("%s#%d", user, i), p))
	}
	require.NoError(t, gokeyring.Set(svc, user, fmt.Sprintf("%s3:%08x", sentinel, crc32.ChecksumIEEE([]byte(value)))))
	got, err := kr.Get(ctx, svc, user)
	require.NoError(t, err)
	require.Equal(t, value, got)

	require.NoError(t, gokeyring.Set(svc, user, sentinel+"3"))
	got, err = kr.Get(ctx, svc, user)
	require.NoError(t, err)
	require.Equal(t, value, got, "a legacy count-only manifest is accepted")
}

func TestKeyringLayoutAndService(t *testing.T) {
	ctx := context.Background()
	kr, svc := newKeyringShell(t, func(o *native.Options) {
		o.KeyLayout = func(u string) string { return "grantwire/" + u }
	})
	require.NoError(t, kr.Set(ctx, svc, "local:default", "v"))
	raw, err := gokeyring.Get(svc, "grantwire/local:default")
	require.NoError(t, err)
	require.Equal(t, "v", raw)
	_, err = gokeyring.Get(svc, "local:default")
	require.ErrorIs(t, err, gokeyring.ErrNotFound)
}

// noStoreResult is what the keyring-nostore child reports.
type noStoreResult struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Fix       string `json:"fix"`
	Client    string `json:"client_code"`
	ClientMsg string `json:"client_message"`
	Exit      int    `json:"exit"`
	Status    int    `json:"status"`
	ElapsedMS int64  `json:"elapsed_ms"`
}

const plantedSecret = "PLANTED-nostore-secret-7f3a"

func childKeyringNoStore() error {
	ctx := context.Background()
	timeout, _ := time.ParseDuration(os.Getenv("GW_KEYRING_TIMEOUT"))
	sh, err := native.New(native.Options{Home: os.Getenv("GW_HOME"), Service: "grantwire.test.nostore", KeyringTimeout: timeout, NoWatch: true})
	if err != nil {
		return err
	}
	var out noStoreResult
	start := time.Now()
	err = sh.Capabilities().Keyring.Set(ctx, "grantwire.test.nostore", "local:default", plantedSecret)
	out.ElapsedMS = time.Since(start).Milliseconds()
	var ce *hostabi.HostError
	if errors.As(err, &ce) {
		out.Code, out.Message, out.Fix = ce.Code, ce.Detail, ce.Fix
	} else if err != nil {
		out.Message = err.Error()
	}
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(sh.Capabilities()))
	if err != nil {
		return err
	}
	_, err = c.Configure(ctx, "google", grantwire.ConfigureInput{ClientID: "client-id", ClientSecret: plantedSecret})
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		out.Client, out.ClientMsg, out.Exit, out.Status = ge.Code, ge.Message, ge.Exit, ge.Status
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func runNoStore(t *testing.T, env ...string) (noStoreResult, string) {
	t.Helper()
	home := t.TempDir()
	cmd := child(t, "keyring-nostore", append([]string{"GW_HOME=" + home}, env...)...)
	// Drop the inherited bus so only env decides.
	var kept []string
	for _, e := range cmd.Env {
		if !strings.HasPrefix(e, "DBUS_SESSION_BUS_ADDRESS=") {
			kept = append(kept, e)
		}
	}
	cmd.Env = append(kept, env...)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var r noStoreResult
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	return r, home
}

func assertNoSecretUnder(t *testing.T, dir, secret string) {
	t.Helper()
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotContains(t, string(b), secret, "secret found in %s", p)
		return nil
	}))
}

// With the session bus pointed at nothing, the keyring reports INSECURE_STORE with what to
// install, and nothing falls back to a file. This runs in a child process: godbus keeps
// one session bus connection per process.
func TestKeyringNoStoreIsInsecureStore(t *testing.T) {
	r, home := runNoStore(t, "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/grantwire-test-bus")
	require.Equal(t, "INSECURE_STORE", r.Code, "%+v", r)
	require.Contains(t, r.Message, "session bus is unreachable")
	require.Contains(t, r.ClientMsg, "never stores secrets in a file")
	require.Equal(t, native.SessionFix, r.Fix, "the project's own Secret Service for the shell (issue 20 §2.3)")
	require.Contains(t, r.Message, "gnome-keyring", "what to install for a desktop")
	require.Equal(t, "INSECURE_STORE", r.Client)
	require.Equal(t, 5, r.Exit)
	require.Equal(t, 500, r.Status)
	require.Contains(t, r.ClientMsg, "apt-get install gnome-keyring")
	require.NotContains(t, r.Message+r.ClientMsg, plantedSecret)
	assertNoSecretUnder(t, home, plantedSecret)
}

// With no session bus configured at all, the shell refuses before go-keyring would run
// dbus-launch.
func TestKeyringNoBusIsInsecureStore(t *testing.T) {
	if _, err := os.Stat(fmt.Sprintf("/run/user/%d/bus", os.Getuid())); err == nil {
		t.Skip("this machine has a per-user bus at /run/user, so 'no bus at all' cannot be staged here")
	}
	r, home := runNoStore(t)
	require.Equal(t, "INSECURE_STORE", r.Code, "%+v", r)
	require.Contains(t, r.Message, "no D-Bus session bus")
	require.Equal(t, native.SessionFix, r.Fix)
	require.Contains(t, r.Message, "gnome-keyring")
	require.Equal(t, "INSECURE_STORE", r.Client)
	assertNoSecretUnder(t, home, plantedSecret)
}

// A store that never answers (here: a bus socket that accepts and stays silent, as a
// locked desktop keyring waiting for a prompt would) is cut off by the timeout.
func TestKeyringTimeout(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "bus")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	r, _ := runNoStore(t, "DBUS_SESSION_BUS_ADDRESS=unix:path="+sock, "GW_KEYRING_TIMEOUT=300ms")
	require.Equal(t, "INSECURE_STORE", r.Code, "%+v", r)
	require.True(t, strings.HasPrefix(r.Message, "the OS credential store did not answer a write within 300ms"), r.Message)
	require.Contains(t, r.Fix, "unlock")
	require.Less(t, r.ElapsedMS, int64(3000))
	require.GreaterOrEqual(t, r.ElapsedMS, int64(300))
}
