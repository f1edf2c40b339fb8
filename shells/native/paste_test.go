package native_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
	"github.com/grantwire/grantwire/shells/native"
)

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
