package native

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCallback feeds raw HTTP requests to the loopback callback handler (issue 10, item
// 19). Whatever arrives: the answer is one of the static pages (nothing of the request is
// echoed), and a callback is accepted only when it is an origin-form GET of /callback
// with the Host header of the listener and exactly the one right state, at most once;
// the parameters reach the policy as they came (it judges them), two codes never.
// Longer: go test ./shells/native -run '^$' -fuzz FuzzCallback -fuzztime 5m
func FuzzCallback(f *testing.F) {
	const host, state = "127.0.0.1:41234", "c3RhdGUtc3RhdGUtc3RhdGU"
	for _, seed := range []string{
		"GET /callback?code=abc&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET /callback?error=access_denied&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET http://" + host + "/callback?code=abc&state=" + state + " HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"GET /callback?code=abc&state=" + state + "&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET /callback?code=<script>&state=wrong HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"POST /callback?code=abc&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 3\r\n\r\nabc",
		"GET /favicon.ico HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET /callback?code=abc&state=" + state + " HTTP/1.0\r\n\r\n",
		"GET //callback?code=abc&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET /callback?code=abc&code=def&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
		"GET /callback?error=%1b%5b31m&state=" + state + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	pages := map[string]bool{pageDone: true, pageNotDone: true, pageRefused: true, pageGone: true, pageNotFound: true, pageNoMethods: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // net/http answers 400 itself; the handler never sees it
		}
		cb := &callback{host: host, result: make(chan callbackResult, 1)}
		want := state
		cb.state.Store(&want)
		for round := range 2 {
			rec := httptest.NewRecorder()
			cb.ServeHTTP(rec, req)
			body := rec.Body.String()
			if !pages[body] {
				t.Fatalf("answer is not a static page: %q", body)
			}
			if rec.Header().Get("Content-Security-Policy") != "default-src 'none'" {
				t.Fatal("an answer without the page headers")
			}
			select {
			case res := <-cb.result:
				if round > 0 {
					t.Fatal("a second callback was accepted")
				}
				q := req.URL.Query()
				switch {
				case !strings.HasPrefix(req.RequestURI, "/"):
					t.Fatalf("accepted a request line that is not origin-form: %q", req.RequestURI)
				case req.Host != host:
					t.Fatalf("accepted Host %q", req.Host)
				case req.Method != http.MethodGet || req.URL.Path != "/callback":
					t.Fatalf("accepted %s %s", req.Method, req.URL.Path)
				case len(q["state"]) != 1 || q.Get("state") != state:
					t.Fatalf("accepted state %q", q["state"])
				case res["code"] != "" && (len(q["code"]) != 1 || res["code"] != q.Get("code")):
					t.Fatalf("accepted code %q from %q", res["code"], q["code"])
				case len(q["code"]) > 1 && res["error"] != "invalid_request":
					t.Fatalf("two codes accepted as %q", res)
				}
				if rec.Code != http.StatusOK {
					t.Fatalf("accepted with status %d", rec.Code)
				}
			default:
				if rec.Code == http.StatusOK {
					t.Fatalf("200 without accepting: %q", raw)
				}
			}
		}
	})
}
