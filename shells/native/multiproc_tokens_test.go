package native_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/shells/native"
)

type refreshReport struct {
	OK     int            `json:"ok"`
	Errors map[string]int `json:"errors"`
	First  string         `json:"first_error,omitempty"`
}

// childRefresher asks for an access token GW_ROUNDS times; the server's tokens live 30 s,
// so every call refreshes under the provider's lock.
func childRefresher() error {
	ctx := context.Background()
	rounds, _ := strconv.Atoi(os.Getenv("GW_ROUNDS"))
	client, _, err := childClient(ctx, native.Options{Home: os.Getenv("GW_HOME"), Service: os.Getenv("GW_SERVICE"),
		LockDir: cmp.Or(os.Getenv("GW_LOCK_DIR"), os.Getenv("GRANTWIRE_LOCK_DIR"))}, nil)
	if err != nil {
		return err
	}
	rep := refreshReport{Errors: map[string]int{}}
	for range rounds {
		_, err := client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
		if err == nil {
			rep.OK++
			continue
		}
		code := "other"
		var ge *grantwire.Error
		if errors.As(err, &ge) {
			code = ge.Code
		}
		rep.Errors[code]++
		if rep.First == "" {
			rep.First = err.Error()
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// Three processes refresh the same provider against the rotating server, 1000 rounds in
// all: no refresh token is ever presented twice, no invalid_grant, and the stored refresh
// token is the server's only live one at the end.
func TestMultiProcessRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process stress test; runs without -short")
	}
	requireKeyring(t)
	w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 30}, worldOpts{noWatch: true})

	const procs, total = 3, 1000
	start := time.Now()
	reports := runRefreshers(t, w, procs, total)
	elapsed := time.Since(start)
	ok := 0
	for p := range procs {
		require.Empty(t, reports[p].Errors, "process %d: %s", p, reports[p].First)
		ok += reports[p].OK
	}
	require.Equal(t, total, ok)

	st := w.srv.Stats()
	require.Zero(t, st.ReuseDetected, "a refresh token was presented twice")
	require.Zero(t, st.InvalidGrants)
	require.Equal(t, total, st.Refreshes, "every round refreshed with the newest token")
	require.Equal(t, 1, w.srv.LiveRefreshTokens())
	blob, found := storedConnection(t, w.service, "local")
	require.True(t, found)
	require.True(t, w.srv.Live(blob["refresh_token"].(string)), "the stored refresh token is the newest")
	t.Logf("%d processes, %d refreshes in %s (%.1f ms per refresh); server: %+v",
		procs, total, elapsed.Round(time.Millisecond), float64(elapsed.Milliseconds())/total, st)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func runRefreshers(t *testing.T, w *world, procs, total int, env ...string) []refreshReport {
	t.Helper()
	var wg sync.WaitGroup
	reports := make([]refreshReport, procs)
	errs := make([]error, procs)
	for p := range procs {
		rounds := total / procs
		if p < total%procs {
			rounds++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := child(t, "refresher", append([]string{"GW_HOME=" + w.home, "GW_SERVICE=" + w.service,
				"GW_SERVER=" + w.srv.URL(), "GW_ROUNDS=" + strconv.Itoa(rounds)}, env...)...).Output()
			if err == nil {
				err = json.Unmarshal(out, &reports[p])
			}
			errs[p] = err
		}()
	}
	wg.Wait()
	for p := range procs {
		require.NoError(t, errs[p])
	}
	return reports
}

// The checks above are not vacuous: without the provider lock, processes refresh with the
// same token, the server detects the reuse and revokes the connection.
func TestMultiProcessRefreshWithoutLocksFails(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process stress test; runs without -short")
	}
	requireKeyring(t)
	w := connected(t, authserver.Config{ClientID: "cid", ExpiresIn: 30}, worldOpts{noWatch: true})
	reports := runRefreshers(t, w, 3, 90, "GW_NO_LOCKS=1")
	failures := 0
	for _, r := range reports {
		for _, n := range r.Errors {
			failures += n
		}
	}
	st := w.srv.Stats()
	require.Positive(t, st.ReuseDetected, "%+v", st)
	require.Positive(t, failures)
	t.Logf("without locks: %d reuses detected, %d failed calls (%+v)", st.ReuseDetected, failures, reports)
}

// childChanger is process B: it opens its own client on the home and makes one change
// (GW_ACTION), then exits.
func childChanger() error {
	ctx := context.Background()
	client, sh, err := childClient(ctx, native.Options{Home: os.Getenv("GW_HOME"), Service: os.Getenv("GW_SERVICE"),
		LockDir: os.Getenv("GRANTWIRE_LOCK_DIR"), Browser: autoBrowser, Prompt: os.Stderr}, nil)
	if sh != nil {
		defer sh.Close()
	}
	if err != nil {
		return err
	}
	defer client.Close(ctx)
	switch a := os.Getenv("GW_ACTION"); a {
	case "revoke":
		_, err = client.Revoke(ctx, "local", "builtin:chat")
	case "disconnect":
		_, err = client.Disconnect(ctx, "local")
	case "configure":
		_, err = client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid2", ClientSecret: "cs2"})
	case "configure-and-clear":
		// The client rotates, and this process's own token call trips the tripwire, which
		// clears the connection.
		if _, err = client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid2", ClientSecret: "cs2"}); err == nil {
			_, err = client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
			var ge *grantwire.Error
			if errors.As(err, &ge) {
				fmt.Println(ge.Code)
				err = nil
			} else if err == nil {
				err = errors.New("the tripwire did not trip")
			}
		}
	case "forget-connection":
		// Another grantwire process deletes the stored connection alone.
		err = sh.Capabilities().Keyring.Delete(ctx, os.Getenv("GW_SERVICE"), "local:default")
	case "reconnect":
		_, err = client.Connect(ctx, "local", []string{"mail.read"}, []string{"builtin:chat"})
	default:
		err = fmt.Errorf("unknown action %q", a)
	}
	return err
}

// Process A holds an open client that has served its cached token without a round trip
// to the Secret Service; process B changes the world and exits; A's very next call sees
// the change.
func TestMultiProcessCacheSeesChanges(t *testing.T) {
	requireKeyring(t)
	for _, tc := range []struct {
		action string
		code   string // the error of A's next call; "" means a token
		// keyring: the change is in the keyring (A must read it from the store); the
		// others are refused by the grants ledger before the keyring is consulted.
		keyring bool
	}{
		{"revoke", "AGENT_NOT_GRANTED", false},
		{"disconnect", "AGENT_NOT_GRANTED", false}, // disconnect drops the grants too
		{"forget-connection", "NOT_CONNECTED", true},
		{"configure", "REAUTH_REQUIRED", true},
		{"configure-and-clear", "NOT_CONNECTED", true},
		{"reconnect", "", true},
	} {
		t.Run(tc.action, func(t *testing.T) {
			ctx := context.Background()
			w := connected(t, authserver.Config{ClientID: "cid", ClientSecret: "cs", ExpiresIn: 3600}, worldOpts{noWatch: true})
			get := func() (*grantwire.Token, error) {
				return w.client.GetAccessToken(ctx, "local", []string{"mail.read"}, "builtin:chat")
			}
			first, err := get()
			require.NoError(t, err)
			store := native.CountKeyringReads(w.shell)
			again, err := get()
			require.NoError(t, err)
			require.Equal(t, first.AccessToken, again.AccessToken)
			require.Zero(t, store.Load(), "the cached token was served without a round trip to the Secret Service")

			cmd := child(t, "changer", "GW_HOME="+w.home, "GW_SERVICE="+w.service, "GW_SERVER="+w.srv.URL(), "GW_ACTION="+tc.action)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "process B: %s", out)
			exited := time.Now()

			tok, err := get()
			seen := time.Since(exited)
			if tc.code == "" {
				require.NoError(t, err)
				require.NotEqual(t, first.AccessToken, tok.AccessToken, "the token of the new connection, not the cached one")
				blob, found := storedConnection(t, w.service, "local")
				require.True(t, found)
				require.True(t, w.srv.Live(blob["refresh_token"].(string)))
			} else {
				require.Nil(t, tok, "process A served a token after B's %s", tc.action)
				var ge *grantwire.Error
				require.ErrorAs(t, err, &ge)
				require.Equal(t, tc.code, ge.Code, "%v", err)
			}
			if tc.keyring {
				require.Positive(t, store.Load(), "the change was read from the store")
			}
			t.Logf("%s by process B seen by A's first call after B exited (that call took %s)", tc.action, seen.Round(time.Microsecond))
		})
	}
}
