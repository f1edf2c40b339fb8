package native_test

// The user's part of an authorization through the OS shell: the loopback listener (its
// Host check, its last page), an operation's own browser, paste mode and the device prompt.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

// rawGet sends one request line and headers as written, over TCP, and returns the status
// and the body of the answer.
func rawGet(t *testing.T, addr, target string, headers ...string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	req := "GET " + target + " HTTP/1.1\r\n" + strings.Join(append(headers, "Connection: close"), "\r\n") + "\r\n\r\n"
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// The loopback checks the Host header as the client sent it: an absolute-form request
// line (GET http://127.0.0.1:PORT/callback) names the right authority, but its Host header
// says evil.example, and net/http would report the request line's host as r.Host. Such
// requests are refused, consume nothing, and the real callback still completes
// (issue 10, item 15).
func TestLoopbackChecksTheHostHeaderAsSent(t *testing.T) {
	ctx := context.Background()
	var w *world
	type answer struct {
		name   string
		status int
		body   string
	}
	var answers []answer
	browser := func(authURL string) error {
		u, _ := url.Parse(authURL)
		redirect, _ := url.Parse(u.Query().Get("redirect_uri"))
		q := url.Values{"code": {"evil-code"}, "state": {u.Query().Get("state")}}.Encode()
		addr := redirect.Host
		for _, tc := range []struct {
			name, target string
			headers      []string
		}{
			{"absolute form, foreign Host", "http://" + addr + "/callback?" + q, []string{"Host: evil.example"}},
			{"absolute form, foreign Host with port", "http://" + addr + "/callback?" + q, []string{"Host: evil.example:" + redirect.Port()}},
			{"absolute form, right Host", "http://" + addr + "/callback?" + q, []string{"Host: " + addr}},
			{"absolute form, foreign authority", "http://evil.example/callback?" + q, []string{"Host: " + addr}},
			{"origin form, foreign Host", "/callback?" + q, []string{"Host: evil.example"}},
			{"HTTP/1.1 without Host", "/callback?" + q, nil},
		} {
			status, body := rawGet(t, addr, tc.target, tc.headers...)
			answers = append(answers, answer{tc.name, status, body})
		}
		require.Equal(t, 0, w.srv.Stats().CodeExchanges, "nothing was consumed")
		autoBrowser(authURL)
		return nil
	}
	w = newWorld(t, worldOpts{server: &authserver.Config{ClientID: "cid"}, browser: browser, noWatch: true})
	configure(t, w, "cid", "")
	_, err := w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, w.srv.Stats().CodeExchanges)
	require.Len(t, answers, 6)
	for _, a := range answers {
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", a.name, a.body)
		require.NotContains(t, a.body, "evil", a.name)
		require.NotContains(t, a.body, "Authorization complete", a.name)
	}
	require.NotContains(t, w.prompt.String(), "evil")
}

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

// An operation's own browser (hostabi.WithBrowser: how grantwire serve hands the URL to the
// page) replaces the shell's, and makes the loopback usable in a session that has no
// browser and nobody at a terminal; without it that session is refused at once.
func TestAnOperationsOwnBrowserIsUsedInsteadOfTheShells(t *testing.T) {
	for _, tc := range []struct {
		name    string
		browser func(string) error
	}{{"no browser, nobody at a terminal", nil}, {"the shell's browser", noBrowser}} {
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

// Paste mode: every line that is not this authorization's redirect is refused with why,
// never echoed, and the wait goes on; the redirect itself is the callback, once.
func TestPasteModeChecksWhatIsPasted(t *testing.T) {
	in, feed := io.Pipe()
	var prompt testenv.Buffer // what the shell prints for the user
	sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: &prompt, Paste: in})
	require.NoError(t, err)
	defer sh.Close()
	cb, err := sh.Capabilities().Loopback.Open(context.Background(), "local", hostabi.ModePaste)
	require.NoError(t, err)
	defer cb.Close()
	redirect, err := url.Parse(cb.RedirectURI())
	require.NoError(t, err)

	type answer struct {
		params map[string]string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		p, err := cb.Wait(context.Background(), hostabi.Authorization{URL: "https://as.example.com/authorize?x=1",
			State: "the-state", Connector: "local", Alternative: "grantwire connect local --device", Timeout: 30 * time.Second})
		got <- answer{p, err}
	}()
	good := *redirect
	good.RawQuery = url.Values{"code": {"the-code"}, "state": {"the-state"}, "iss": {"https://as.example.com"}}.Encode()
	lines := []string{
		strings.Replace(good.String(), "the-state", "evil-state", 1),
		strings.Replace(good.String(), cb.RedirectURI(), "http://localhost:"+redirect.Port()+"/callback", 1),
		strings.Replace(good.String(), "/callback", "/evil", 1),
		good.String() + "&state=the-state",
		good.String() + "#evil-fragment",
		"<script>alert(1)</script>",
		"   ",
		strings.Repeat("x", 9000),
		"  " + good.String() + "  ",
	}
	for _, l := range lines {
		_, err := io.WriteString(feed, l+"\n")
		require.NoError(t, err)
	}
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, map[string]string{"code": "the-code", "state": "the-state", "iss": "https://as.example.com"}, a.params)
	out := prompt.String()
	require.Equal(t, 7, strings.Count(out, "The pasted address was refused ("), out)
	for _, why := range []string{"its state is not this authorization's", "it is not this authorization's redirect address",
		"it carries a fragment", "it is not an address", "it is longer than any redirect address"} {
		require.Contains(t, out, why)
	}
	for _, leak := range []string{"evil", "<script>", "localhost", "the-code", "xxxxxxxx"} {
		require.NotContains(t, out, leak)
	}
	require.Contains(t, out, "(Or press Ctrl-C and run: grantwire connect local --device)")

	// Single use: the listener refuses the same callback now.
	resp, err := http.Get(good.String())
	if err == nil {
		_ = resp.Body.Close()
		require.Equal(t, http.StatusGone, resp.StatusCode)
	}
}

// Paste mode needs something to paste into; when the input ends, the listener still
// serves until the timeout.
func TestPasteModeWithoutInput(t *testing.T) {
	sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: io.Discard})
	require.NoError(t, err)
	defer sh.Close()
	_, err = sh.Capabilities().Loopback.Open(context.Background(), "local", hostabi.ModePaste)
	require.ErrorIs(t, err, hostabi.ErrUnavailable)

	var prompt testenv.Buffer // what the shell prints for the user
	sh2, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: &prompt, Paste: strings.NewReader("")})
	require.NoError(t, err)
	defer sh2.Close()
	cb, err := sh2.Capabilities().Loopback.Open(context.Background(), "local", hostabi.ModePaste)
	require.NoError(t, err)
	defer cb.Close()
	_, err = cb.Wait(context.Background(), hostabi.Authorization{URL: "https://as.example.com/a", State: "s", Connector: "local", Timeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, prompt.String(), "The input ended; still waiting for a browser to come back to "+cb.RedirectURI())
}

// The device prompt: where to go, the code, the complete URI, how long it lasts; nobody at
// a terminal cannot be shown it.
func TestDevicePrompt(t *testing.T) {
	var prompt testenv.Buffer // what the shell prints for the user
	sh, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: &prompt, Interactive: true})
	require.NoError(t, err)
	defer sh.Close()
	d := hostabi.DevicePrompt{Connector: "microsoft", VerificationURI: "https://microsoft.com/devicelogin", UserCode: "FNCLD6TRX",
		VerificationURIComplete: "https://microsoft.com/devicelogin?otc=FNCLD6TRX", ExpiresIn: 15 * time.Minute}
	require.NoError(t, sh.Capabilities().Prompt.Show(context.Background(), d))
	require.Equal(t, "To authorize microsoft, open https://microsoft.com/devicelogin on any device and enter the code:\n\n  FNCLD6TRX\n\n"+
		"(or open https://microsoft.com/devicelogin?otc=FNCLD6TRX, which carries the code)\nThe code can be used for 15m0s.\n", prompt.String())

	sh2, err := native.New(native.Options{Home: t.TempDir(), NoWatch: true, Prompt: io.Discard})
	require.NoError(t, err)
	defer sh2.Close()
	require.ErrorIs(t, sh2.Capabilities().Prompt.Show(context.Background(), d), hostabi.ErrUnavailable)
}
