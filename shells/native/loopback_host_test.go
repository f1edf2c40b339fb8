package native_test

import (
	"bufio"
	"context"
	"github.com/grantwire/grantwire"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
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
	_, err := w.client.Configure(ctx, "local", grantwire.ConfigureInput{ClientID: "cid"})
	require.NoError(t, err)
	_, err = w.client.Connect(ctx, "local", []string{"mail.read"}, nil)
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
