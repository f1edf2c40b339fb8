package native_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/grantwire/grantwire/catalog"
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
func childRefresher() int {
	ctx := context.Background()
	rounds, _ := strconv.Atoi(os.Getenv("GW_ROUNDS"))
	sh, err := native.New(native.Options{Home: os.Getenv("GW_HOME"), Service: os.Getenv("GW_SERVICE"), NoWatch: true,
		LockDir: cmp.Or(os.Getenv("GW_LOCK_DIR"), os.Getenv("GRANTWIRE_LOCK_DIR")),
		Getenv:  func(string) string { return "" }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	caps := sh.Capabilities()
	if os.Getenv("GW_NO_LOCKS") == "1" {
		caps.Locks = noLocks{}
	}
	client, err := grantwire.New(ctx, grantwire.WithCapabilities(caps), grantwire.WithCatalog(catalog.Bytes(testCatalogAt(os.Getenv("GW_SERVER")))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
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
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// noLocks grants every lock at once (a broken shell, for the negative control).
type noLocks struct{}

func (noLocks) TryLock(context.Context, string, time.Duration) (func(), error) { return func() {}, nil }

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
