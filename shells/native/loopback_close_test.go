package native_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	// A token endpoint that answers at once, and no userinfo: the authorization returns as
	// soon as it can after the callback.
	token := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"at","refresh_token":"rt","token_type":"Bearer","expires_in":60}`)
	}))
	defer token.Close()
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
	sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: io.Discard, Browser: browser,
		AuthTimeout: 10 * time.Second,
		CheckURL:    func(context.Context, *url.URL, string, int, *url.URL) error { return nil }})
	require.NoError(t, err)
	defer sh.Close()
	conn := hostabi.Connector{ID: "local", Type: "oauth_pkce", AuthorizationURL: token.URL + "/authorize", TokenURL: token.URL + "/token"}
	for i := range 100 {
		r := sh.Capabilities().OAuth.Authorize(context.Background(), conn, hostabi.Client{ID: "cid"}, []string{"s"})
		require.Equal(t, hostabi.AuthOK, r.Status, "%+v", r.Token)
		page := <-pages
		require.True(t, strings.HasPrefix(page, "200 ") && strings.Contains(page, "Authorization complete") && strings.HasSuffix(page, "<nil>"),
			"authorization %d: the browser got %q", i, page)
	}
}
