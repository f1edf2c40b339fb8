package native_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/shells/native"
)

// The browser always receives the whole "Authorization complete" page, even when the
// authorization ends (and its loopback listener closes) right after the callback: closing
// the listener lets the answer to the accepted callback finish instead of cutting it off.
func TestTheCallbackPageSurvivesTheEndOfTheAuthorization(t *testing.T) {
	pages := make(chan string, 1)
	browser := func(authURL string) error {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		q := u.Query()
		go func() {
			resp, err := http.Get(q.Get("redirect_uri") + "?" + url.Values{"code": {"c"}, "state": {q.Get("state")}}.Encode())
			if err != nil {
				pages <- "error: " + err.Error()
				return
			}
			b, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			pages <- fmt.Sprintf("%d %s %v", resp.StatusCode, b, err)
		}()
		return nil
	}
	sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: io.Discard, Browser: browser})
	require.NoError(t, err)
	defer sh.Close()
	lb := sh.Capabilities().Loopback
	for i := range 100 {
		cb, err := lb.Open(context.Background(), "local", hostabi.ModeListen)
		require.NoError(t, err)
		authURL := "http://127.0.0.1:9/authorize?" + url.Values{"redirect_uri": {cb.RedirectURI()}, "state": {"st-" + fmt.Sprint(i)}}.Encode()
		params, err := cb.Wait(context.Background(), hostabi.Authorization{URL: authURL, State: "st-" + fmt.Sprint(i), Connector: "local", Timeout: 10 * time.Second})
		require.NoError(t, err)
		require.Equal(t, "c", params["code"])
		require.NoError(t, cb.Close()) // the operation ends at once
		page := <-pages
		require.True(t, strings.HasPrefix(page, "200 ") && strings.Contains(page, "Authorization complete") && strings.HasSuffix(page, "<nil>"),
			"authorization %d: the browser got %q", i, page)
	}
}
