package main_test

// End-to-end tests of authorizing without a browser on this machine, on the real parts
// (the built binary, the private Secret Service, the local authorization server on
// 127.0.0.1): the device authorization grant (connect --device, RFC 8628) and paste-back
// (connect --no-browser). The server's device codes last seconds and ask for a poll a
// second, so each path takes a second or two; its Stats count what the CLI did, TooFast
// included (a poll sooner than the interval). Every output is searched for the planted
// secrets and the tokens and device codes the server issued (newE2E's leak check).

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// deviceServer is the local server with fast device codes (a poll a second).
func deviceServer(t *testing.T, clientID string) (*e2e, string) {
	t.Helper()
	secret := "bb-client-secret-" + randHex(8)
	w := newE2E(t, authserver.Config{ClientID: clientID, ClientSecret: secret, Account: "dev@example.com",
		DeviceInterval: 1, DeviceExpiresIn: 60})
	w.configureClient(clientID, secret)
	return w, secret
}

var (
	codeLine = regexp.MustCompile(`open (\S+) on any device and enter the code:\n\n  (\S+)\n`)
	codeJSON = regexp.MustCompile(`(?m)^\{"device":\{.*\}\}$`)
)

// deviceLine is connect --device --json's line on stderr.
type deviceLine struct {
	Device struct {
		Connector               string `json:"connector"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		UserCode                string `json:"user_code"`
		ExpiresIn               int    `json:"expires_in"`
	} `json:"device"`
}

// waitCode waits for the device code a running connect --device shows (as text, or as a
// JSON line with --json): the verification URI and the user code.
func (s *started) waitCode(t *testing.T) (uri, code string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if m := codeLine.FindStringSubmatch(s.errText()); m != nil {
			return m[1], m[2]
		}
		if line := codeJSON.FindString(s.errText()); line != "" {
			var d deviceLine
			require.NoError(t, json.Unmarshal([]byte(line), &d))
			return d.Device.VerificationURI, d.Device.UserCode
		}
		select {
		case <-s.done:
			t.Fatalf("the command ended (exit %d) before showing a device code:\n%s", s.code, s.errText())
		case <-deadline:
			t.Fatalf("no device code within 30 s:\n%s", s.errText())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The device flow end to end: the code and where to enter it are shown (never the device
// code), the user approves on the verification page, the connection is stored and works.
func TestE2EDeviceApprove(t *testing.T) {
	w, _ := deviceServer(t, "bb-device-client")
	s := w.start(nil, "connect", "google", "--device", "--scopes", "openid,email", "--grant-agent", "builtin:chat", "--timeout", "60s")
	uri, code := s.waitCode(t)
	require.Equal(t, w.srv.VerificationURL(), uri)
	require.Regexp(t, `^[A-Z]{4}-[A-Z]{4}$`, code)
	require.Contains(t, s.errText(), "(or open "+w.srv.VerificationURL()+"?user_code="+code+", which carries the code)")

	// The user opens the complete URI on another device and approves.
	time.Sleep(1500 * time.Millisecond) // a pending poll or two first
	resp, err := http.Get(uri + "?user_code=" + code)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)

	r := s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Connected google as dev@example.com with email openid\nGranted google → builtin:chat: email openid\n", r.stdout)
	require.Contains(t, r.stderr, "grantwire: waiting for the google authorization on another device (up to 1m0s; Ctrl-C cancels)")
	require.Contains(t, r.stderr, "The code can be used for 1m0s.")
	st := w.srv.Stats()
	require.Equal(t, 1, st.DeviceCodes)
	require.Equal(t, 1, st.DeviceExchanges)
	require.GreaterOrEqual(t, st.DevicePolls, 2, "polled while pending, then once approved")
	require.Zero(t, st.TooFast, "the CLI never polls sooner than the interval")

	row := w.status("google")
	require.True(t, row.Configured)
	require.Equal(t, "dev@example.com", row.Account)
	tr := w.token("google", "--agent", "builtin:chat", "--scopes", "email")
	require.Equal(t, 0, tr.code, tr.stderr)
	require.True(t, strings.HasPrefix(tr.stdout, tokenPrefix+"_at_"))
}

// Denial, expiry (whose fix, run again, works) and slow_down on the real parts.
func TestE2EDeviceDenyExpireSlowDown(t *testing.T) {
	w, _ := deviceServer(t, "bb-device-paths")

	// No browser and no terminal: the fix names the device flow, and works as printed.
	e := w.fail(4, "INTERACTIVE_AUTH_REQUIRED", "connect", "google", "--scopes", "openid", "--grant-agent", "builtin:chat")
	require.Equal(t, "grantwire connect google --scopes openid --grant-agent builtin:chat --device", e.Error.Fix)
	w.srv.ScriptDevice("", authserver.DeviceUser{Decision: authserver.DeviceApprove})
	r := w.gw("", strings.Fields(strings.TrimPrefix(e.Error.Fix, "grantwire "))...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Granted google → builtin:chat: openid")
	w.gwJSON("", 0, nil, "disconnect", "google")

	w.srv.ScriptDevice("", authserver.DeviceUser{Polls: []string{"authorization_pending"}, Decision: authserver.DeviceDeny})
	e = w.failDevice(4, "CONSENT_DENIED", "connect", "google", "--device", "--scopes", "openid")
	require.Contains(t, e.Error.Message, "the google authorization was refused (access_denied)")
	require.Empty(t, w.keyring("google:default"))

	// The user never decides: the code expires mid-poll.
	w.srv.ScriptDevice("", authserver.DeviceUser{Decision: authserver.DeviceExpire, ExpiresIn: 2})
	e = w.failDevice(4, "AUTHORIZATION_TIMEOUT", "connect", "google", "--device", "--scopes", "openid")
	require.Contains(t, e.Error.Message, "the google device code expired before it was approved; nothing was stored")
	require.Equal(t, "grantwire connect google --scopes openid --device", e.Error.Fix)
	require.Empty(t, w.keyring("google:default"))

	// The fix, run as printed (the user approves this time), connects.
	w.srv.ScriptDevice("", authserver.DeviceUser{Decision: authserver.DeviceApprove})
	args := strings.Fields(strings.TrimPrefix(e.Error.Fix, "grantwire "))
	r = w.gw("", args...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Connected google as dev@example.com with openid")

	// slow_down: the next polls wait 5 s more (the server counts a poll that comes sooner).
	w.srv.ScriptDevice("", authserver.DeviceUser{Polls: []string{"slow_down"}, Decision: authserver.DeviceApprove})
	r = w.gw("", "connect", "google", "--device", "--scopes", "openid")
	require.Equal(t, 0, r.code, r.stderr)
	st := w.srv.Stats()
	require.Zero(t, st.TooFast, "after slow_down the CLI waited the longer interval")
	require.Equal(t, 3, st.DeviceExchanges, "the two fixes and the slow_down connect")
	require.Equal(t, 1, st.DeviceDenials)
}

// failDevice runs connect --device --json, which must fail: stderr holds the device line
// ({"device": {...}}, no device_code) and then the error object, and nothing else.
func (w *e2e) failDevice(exit int, code string, args ...string) cliError {
	w.t.Helper()
	r := w.gw("", append([]string{"--json"}, args...)...)
	require.Equal(w.t, exit, r.code, "%v\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
	require.Empty(w.t, r.stdout)
	dec := json.NewDecoder(strings.NewReader(r.stderr))
	var d deviceLine
	require.NoError(w.t, dec.Decode(&d), r.stderr)
	require.Equal(w.t, "google", d.Device.Connector)
	require.Equal(w.t, w.srv.VerificationURL(), d.Device.VerificationURI)
	require.NotEmpty(w.t, d.Device.UserCode)
	require.Positive(w.t, d.Device.ExpiresIn)
	require.NotContains(w.t, r.stderr, "device_code")
	var e cliError
	require.NoError(w.t, dec.Decode(&e), r.stderr)
	require.False(w.t, dec.More(), "nothing but JSON on stderr: %s", r.stderr)
	require.Equal(w.t, code, e.Error.Code, e.Error.Message)
	require.Equal(w.t, exit, e.Error.Exit)
	return e
}

// Ctrl-C while polling: exit 130, nothing stored; an approval afterwards changes nothing.
func TestE2EDeviceCtrlCMidPoll(t *testing.T) {
	w, _ := deviceServer(t, "bb-device-cancel")
	s := w.start(nil, "connect", "google", "--device", "--scopes", "openid", "--grant-agent", "builtin:chat")
	_, code := s.waitCode(t)
	time.Sleep(1500 * time.Millisecond) // polling
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	w.requireCancelledNothingStored(t, s.wait(t))
	require.True(t, w.srv.Approve(code), "the code was still pending")
	require.Empty(t, w.keyring("google:default"), "an approval afterwards stores nothing")
	require.Zero(t, w.srv.Stats().DeviceExchanges)
}

// Two device connects of one provider at once: the one approved first stores its
// connection; the other, approved later, finds it under the lock, keeps it, revokes its own
// fresh authorization and reports BUSY. Nothing is lost: the winner's connection, grant
// and token work, and only its refresh token is live at the provider.
func TestE2ETwoDeviceConnectsOneWins(t *testing.T) {
	w, _ := deviceServer(t, "bb-device-race")
	a := w.start(nil, "--json", "connect", "google", "--device", "--scopes", "openid,email", "--grant-agent", "builtin:chat")
	b := w.start(nil, "--json", "connect", "google", "--device", "--scopes", "openid,email", "--grant-agent", "builtin:research")
	_, codeA := a.waitCode(t)
	_, codeB := b.waitCode(t)
	require.NotEqual(t, codeA, codeB)

	require.True(t, w.srv.Approve(codeB))
	rb := b.wait(t)
	w.record(rb.stdout, rb.stderr)
	require.Equal(t, 0, rb.code, rb.stderr)

	require.True(t, w.srv.Approve(codeA))
	ra := a.wait(t)
	w.record(ra.stdout, ra.stderr)
	require.Equal(t, 75, ra.code, ra.stderr)
	var e cliError
	require.NoError(t, json.Unmarshal([]byte(ra.stderr[strings.Index(ra.stderr, "{\n"):]), &e), ra.stderr)
	require.Equal(t, "BUSY", e.Error.Code)
	require.Contains(t, e.Error.Message, "another connect of google stored a connection (dev@example.com) while this one waited for the authorization; it was kept")
	require.Empty(t, e.Error.Fix, "nothing to fix: the connection exists")

	st := w.srv.Stats()
	require.Equal(t, 2, st.DeviceExchanges)
	require.Equal(t, 1, st.Revocations, "the losing authorization was revoked at the provider")
	require.Equal(t, 1, w.srv.LiveRefreshTokens(), "only the stored connection's refresh token is live")
	row := w.status("google")
	require.True(t, row.Configured)
	require.Contains(t, row.Grants, "builtin:research")
	require.NotContains(t, row.Grants, "builtin:chat", "the loser granted nothing")
	tr := w.token("google", "--agent", "builtin:research", "--scopes", "email")
	require.Equal(t, 0, tr.code, tr.stderr)

	// The printed fix works.
	r := w.gw("", "status", "google")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "dev@example.com")
}

// redirectOf plays the user's browser up to the redirect back to 127.0.0.1, which it does
// not load (it runs elsewhere): the address the user pastes.
func redirectOf(t *testing.T, authURL string) *url.URL {
	t.Helper()
	resp, err := noFollow.Get(authURL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	u, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/callback", u.Path)
	return u
}

var noFollow = &http.Client{Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Paste-back with hostile lines first: another authorization's state, another redirect
// address, markup, a fragment — each refused without being echoed, and the wait goes on;
// the real redirect then connects. A pasted error with markup is refused without echoing it.
func TestE2EPasteBackRefusesWhatIsNotThisRedirect(t *testing.T) {
	w, _ := deviceServer(t, "bb-paste-client")

	// Gmail is not among Google's limited-input scopes: the device flow is refused with the
	// paste-back command, run below as printed.
	e := w.fail(3, "CONFIGURATION", "connect", "google", "--device", "--scopes", gmailRead, "--grant-agent", "builtin:chat")
	require.Equal(t, "grantwire connect google --scopes "+gmailRead+" --grant-agent builtin:chat --no-browser", e.Error.Fix)
	require.Zero(t, w.srv.Stats().DeviceCodes, "refused before any request")

	in, feed := io.Pipe()
	defer feed.Close()
	s := w.startIn(in, nil, strings.Fields(strings.TrimPrefix(e.Error.Fix, "grantwire "))...)
	authURL := s.waitURL(t)
	real := redirectOf(t, authURL)
	require.NotEmpty(t, real.Query().Get("code"))

	with := func(change func(u *url.URL, q url.Values)) string {
		u := *real
		q := u.Query()
		change(&u, q)
		u.RawQuery = q.Encode()
		return u.String()
	}
	hostile := []struct{ line, why string }{
		{with(func(_ *url.URL, q url.Values) { q.Set("state", "another-authorizations-state") }), "its state is not this authorization's"},
		{with(func(_ *url.URL, q url.Values) { q.Del("state") }), "it carries no state"},
		{with(func(u *url.URL, _ url.Values) { u.Host = "127.0.0.1:1" }), "it is not this authorization's redirect address"},
		{with(func(u *url.URL, _ url.Values) { u.Host = strings.Replace(u.Host, "127.0.0.1", "localhost", 1) }), "it is not this authorization's redirect address"},
		{with(func(u *url.URL, _ url.Values) { u.Path = "/other" }), "it is not this authorization's redirect address"},
		{with(func(u *url.URL, _ url.Values) { u.Scheme = "https" }), "it is not this authorization's redirect address"},
		{real.String() + "#frag", "it carries a fragment"},
		{"<script>alert('pasted')</script>", "it is not an address"},
	}
	for _, h := range hostile {
		_, err := io.WriteString(feed, h.line+"\n")
		require.NoError(t, err)
	}
	_, err := io.WriteString(feed, "\n"+real.String()+"\n")
	require.NoError(t, err)
	require.NoError(t, feed.Close()) // exec's Wait waits for standard input to end
	r := s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Connected google as dev@example.com with "+gmailRead)
	for _, h := range hostile {
		require.Contains(t, r.stderr, "The pasted address was refused ("+h.why)
	}
	require.Equal(t, len(hostile), strings.Count(r.stderr, "The pasted address was refused"))
	for _, leak := range []string{"another-authorizations-state", "<script>", "/other", "#frag", "127.0.0.1:1/"} {
		require.NotContains(t, r.stderr, leak, "a pasted line was echoed")
	}
	require.Contains(t, r.stderr, "grantwire: waiting for the google authorization (paste the redirect address below)")
	require.NotContains(t, r.stderr, "\r\033[K", "no spinner over what is pasted")
	require.Equal(t, 1, w.srv.Stats().CodeExchanges)

	// Single use: the listener of that authorization is gone.
	if resp, err := noFollow.Get(real.String()); err == nil {
		_ = resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode)
	}

	// A pasted redirect that carries an error with markup: refused, never echoed.
	in2, feed2 := io.Pipe()
	defer feed2.Close()
	s = w.startIn(in2, nil, "--json", "connect", "google", "--no-browser", "--scopes", gmailRead, "--timeout", "60s")
	back := redirectOf(t, s.waitURL(t))
	q := back.Query()
	q.Del("code")
	q.Set("error", `<img src=x onerror="alert(1)">`)
	q.Set("error_description", "<b>denied</b>")
	back.RawQuery = q.Encode()
	_, err = io.WriteString(feed2, back.String()+"\n")
	require.NoError(t, err)
	require.NoError(t, feed2.Close())
	r = s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 5, r.code, r.stderr)
	// --json: stderr is JSON objects only, the paste-back prompt one of them (issue 20 §2.6).
	var prompts []map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stderr))
	for {
		var v map[string]map[string]any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "under --json stderr holds JSON objects only:\n%s", r.stderr)
		if p, ok := v["prompt"]; ok {
			prompts = append(prompts, p)
		}
	}
	require.NotEmpty(t, prompts, r.stderr)
	require.Equal(t, "paste", prompts[0]["kind"])
	require.Equal(t, "google", prompts[0]["connector"])
	require.True(t, strings.HasPrefix(prompts[0]["url"].(string), w.srv.AuthorizationURL()+"?"), "%v", prompts[0])
	require.EqualValues(t, 60, prompts[0]["timeout_seconds"])
	require.Contains(t, prompts[0]["message"], "paste it here and press Enter")
	require.Contains(t, r.stderr, `"code": "PROVIDER_ERROR"`)
	require.Contains(t, r.stderr, "the authorization endpoint answered unrecognised_error; nothing was stored")
	require.NotContains(t, r.stderr, "onerror")
	require.NotContains(t, r.stderr, "<b>")

	// Standard input that ends without a paste leaves the listener waiting: a browser on
	// this machine still completes the authorization.
	s = w.startIn(strings.NewReader(""), nil, "connect", "google", "--no-browser", "--scopes", gmailRead, "--timeout", "60s")
	authURL = s.waitURL(t)
	require.Eventually(t, func() bool {
		return strings.Contains(s.errText(), "The input ended; still waiting for a browser to come back to http://127.0.0.1:")
	}, 30*time.Second, 20*time.Millisecond, "the end of standard input is reported, and the wait goes on")
	consent(t, authURL)
	r = s.wait(t)
	w.record(r.stdout, r.stderr)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "The input ended; still waiting for a browser to come back to http://127.0.0.1:")
}
