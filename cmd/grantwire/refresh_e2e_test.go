package main_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// refreshWorld is a connected google with builtin:email granted gmail.readonly, on a
// server that rotates refresh tokens and revokes a whole family when one is reused.
func refreshWorld(t *testing.T, expiresIn int64) *e2e {
	t.Helper()
	const clientID = "bb-refresh-client"
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, ExpiresIn: expiresIn})
	w.configureClient(clientID, secret)
	r := w.connectNoBrowser("google", "--scopes", gmailRead, "--grant-agent", "builtin:email")
	require.Equal(t, 0, r.code, r.stderr)
	return w
}

// tokenProc starts `grantwire token` without waiting for it.
func (w *e2e) tokenProc(t *testing.T) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(w.bin, "token", "google", "--agent", "builtin:email", "--scopes", gmailRead)
	cmd.Env, cmd.Dir = w.env, w.home
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	return cmd, &errb
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return -int(st.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1000
	}
	return 0
}

// The access token lives in the credential store beside the refresh token, so separate
// processes share it: 50 `grantwire token` calls within one token lifetime refresh once.
func TestE2EFiftyTokenCallsRefreshOnce(t *testing.T) {
	// Connect's token lives 30 s, under the 60 s margin: the first call must refresh.
	w := refreshWorld(t, 30)
	w.srv.Configure(func(c *authserver.Config) { c.ExpiresIn = 3600 })
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		r := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, 0, r.code, "call %d: %s", i, r.stderr)
		seen[strings.TrimSpace(r.stdout)] = true
	}
	st := w.srv.Stats()
	require.Equal(t, 1, st.Refreshes, "one refresh at the server for 50 calls")
	require.Len(t, seen, 1, "every call after it handed out the same token")
	require.Zero(t, st.ReuseDetected)
}

// kill -9 at random moments of 200 `token` calls (four at a time) loses nothing: calls
// within a token's lifetime write nothing, so no kill can lose a rotation, and the
// connection works afterwards with no refresh token ever reused.
func TestE2EKillNineDuringTokenCallsLosesNothing(t *testing.T) {
	w := refreshWorld(t, 30)
	w.srv.Configure(func(c *authserver.Config) { c.ExpiresIn = 3600 })
	start := time.Now()
	r := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, w.srv.Stats().Refreshes)
	// Four at a time on this machine's cores, a call takes a few times as long as alone.
	span := 4 * time.Since(start)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(seed, 7009))
	delay := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(rnd.Int64N(int64(span)))
	}
	var killed, ok int
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				cmd, errb := w.tokenProc(t)
				timer := time.AfterFunc(delay(), func() { _ = cmd.Process.Kill() })
				code := exitCode(cmd.Wait())
				timer.Stop()
				mu.Lock()
				switch code {
				case 0:
					ok++
				case -int(syscall.SIGKILL):
					killed++
				default:
					t.Errorf("exit %d: %s", code, errb.String())
				}
				mu.Unlock()
			}
		}()
	}
	for i := range 200 {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d calls finished, %d killed", ok, killed)
	require.Positive(t, killed, "some calls were killed")
	require.Positive(t, ok, "some calls finished")

	r = w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	st := w.srv.Stats()
	require.Equal(t, 1, st.Refreshes, "no call but the first refreshed")
	require.Zero(t, st.ReuseDetected)
	require.Zero(t, st.InvalidGrants)
}

// SIGINT or SIGTERM at random moments of `token` calls that all refresh: a signal that
// arrives once the refresh request is on the wire waits for the rotated token to be
// saved; the process exits 0 or 130, and no refresh token is ever reused.
func TestE2ESignalsDuringRefreshesLoseNoRotation(t *testing.T) {
	w := refreshWorld(t, 30) // every call refreshes
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 6749))
	// How long a call takes here.
	start := time.Now()
	for range 3 {
		r := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
		require.Equal(t, 0, r.code, r.stderr)
	}
	typical := time.Since(start) / 3
	before := w.srv.Stats().Refreshes

	codes := map[int]int{}
	for i := 0; i < 40; i++ {
		cmd, errb := w.tokenProc(t)
		sig := syscall.SIGINT
		if i%2 == 1 {
			sig = syscall.SIGTERM
		}
		timer := time.AfterFunc(time.Duration(rnd.Int64N(int64(typical))), func() { _ = cmd.Process.Signal(sig) })
		code := exitCode(cmd.Wait())
		timer.Stop()
		require.Contains(t, []int{0, 130, -int(sig)}, code, "call %d: %s", i, errb.String())
		w.record(errb.String())
		codes[code]++
		require.True(t, w.srv.Live(storedRefreshToken(t, w)), "call %d (exit %d): the stored refresh token is the live one", i, code)
	}
	t.Logf("typical call %s; exits %v; %d refreshes at the server", typical, codes, w.srv.Stats().Refreshes-before)
	require.Positive(t, codes[130], "some calls were interrupted")

	r := w.token("google", "--agent", "builtin:email", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	st := w.srv.Stats()
	require.Zero(t, st.ReuseDetected)
	require.Zero(t, st.InvalidGrants)
}

// storedRefreshToken is the refresh token of google's stored connection.
func storedRefreshToken(t *testing.T, w *e2e) string {
	t.Helper()
	var blob struct {
		RefreshToken string `json:"refresh_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(w.keyring("google:default")), &blob))
	require.NotEmpty(t, blob.RefreshToken)
	return blob.RefreshToken
}
