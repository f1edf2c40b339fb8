package native_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

// An operation's own browser (hostabi.WithBrowser: how grantwire serve hands the URL to the
// page) replaces the shell's, and makes the loopback usable in a session that has no
// browser and nobody at a terminal; without it that session is refused at once.
func TestAnOperationsOwnBrowserIsUsedInsteadOfTheShells(t *testing.T) {
	shellBrowser := func(string) error { return errors.New("the shell's browser must not be used") }
	for _, tc := range []struct {
		name    string
		browser func(string) error
	}{{"no browser, nobody at a terminal", nil}, {"the shell's browser", shellBrowser}} {
		t.Run(tc.name, func(t *testing.T) {
			sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: io.Discard, Browser: tc.browser})
			require.NoError(t, err)
			defer sh.Close()
			lb := sh.Capabilities().Loopback
			if tc.browser == nil {
				_, err := lb.Open(context.Background(), "local", hostabi.ModeListen)
				require.ErrorIs(t, err, hostabi.ErrUnavailable, "without any browser nobody can complete it")
			}
			shown := make(chan string, 1)
			ctx := hostabi.WithBrowser(context.Background(), func(u string) error { shown <- u; return nil })
			cb, err := lb.Open(ctx, "local", hostabi.ModeListen)
			require.NoError(t, err)
			defer cb.Close()
			authURL := "http://127.0.0.1:9/authorize?" + url.Values{"redirect_uri": {cb.RedirectURI()}, "state": {"st"}}.Encode()
			go func() {
				u := <-shown
				parsed, _ := url.Parse(u)
				q := parsed.Query()
				resp, err := http.Get(q.Get("redirect_uri") + "?" + url.Values{"code": {"c"}, "state": {q.Get("state")}}.Encode())
				if err == nil {
					_ = resp.Body.Close()
				}
			}()
			params, err := cb.Wait(ctx, hostabi.Authorization{URL: authURL, State: "st", Connector: "local", Timeout: 10 * time.Second})
			require.NoError(t, err)
			require.Equal(t, "c", params["code"])
		})
	}
}
