package native

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The callback pages are static: they never echo a query parameter, a header or a path.
const (
	pageDone      = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>Authorization complete. You can close this tab and return to grantwire.</p>\n"
	pageNotDone   = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>Authorization was not completed. You can close this tab; grantwire shows what happened.</p>\n"
	pageRefused   = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>This request was refused.</p>\n"
	pageGone      = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>This authorization has already been completed.</p>\n"
	pageNotFound  = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>Not found.</p>\n"
	pageNoMethods = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>Method not allowed.</p>\n"
)

// callbackResult is the one accepted callback's query parameters (the first value of
// each; a repeated code is refused as invalid_request).
type callbackResult map[string]string

// callback is the one-shot loopback listener of an authorization (RFC 8252 §7.3): bound
// to 127.0.0.1 on an ephemeral port kept open for the whole wait, path /callback only,
// Host header checked, state compared in constant time, exactly one callback accepted.
type callback struct {
	ln          net.Listener
	srv         *http.Server
	host        string
	redirectURI string
	state       atomic.Pointer[string] // set by Wait; no callback is accepted before
	accepted    atomic.Bool
	result      chan callbackResult
	onRefused   func(reason string)
	refusedMu   sync.Mutex
	closeOnce   sync.Once
}

func listenCallback() (*callback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	cb := &callback{
		ln:          ln,
		host:        fmt.Sprintf("127.0.0.1:%d", port),
		redirectURI: fmt.Sprintf("http://127.0.0.1:%d/callback", port),
		result:      make(chan callbackResult, 1),
	}
	cb.srv = &http.Server{
		Handler:           cb,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = cb.srv.Serve(ln) }()
	return cb, nil
}

// close stops the listener. Answers already being written (the page of the accepted
// callback, which the handler writes before handing the code over) are allowed to finish
// for up to a second; Close alone would cut the browser's connection mid-answer when the
// authorization ends quickly after the callback.
func (cb *callback) close() {
	cb.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if cb.srv.Shutdown(ctx) != nil {
			_ = cb.srv.Close()
		}
	})
}

func (cb *callback) setOnRefused(f func(reason string)) {
	cb.refusedMu.Lock()
	cb.onRefused = f
	cb.refusedMu.Unlock()
}

func (cb *callback) refused(reason string) {
	cb.refusedMu.Lock()
	f := cb.onRefused
	cb.refusedMu.Unlock()
	if f != nil {
		f(reason)
	}
}

// callbackParams is the accepted callback's parameters: the first value of each, and a
// repeated code refused as invalid_request.
func callbackParams(q url.Values) callbackResult {
	res := callbackResult{}
	for k, vs := range q {
		res[k] = vs[0]
	}
	if len(q["code"]) > 1 {
		delete(res, "code")
		res["error"] = "invalid_request"
	}
	return res
}

func page(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// ServeHTTP answers the loopback. Refusals (wrong path, method, Host or state) consume
// nothing and the wait goes on; the first callback with the right state ends it.
//
// Only origin-form request lines ("GET /callback?…", what a browser sends to a server
// that is not a proxy) are accepted: for an absolute-form line ("GET
// http://127.0.0.1:PORT/callback") net/http reports the line's authority as r.Host and
// drops the Host header, so a request sent with "Host: evil.example" would pass the Host
// check. With origin form, r.Host is the Host header exactly as sent.
func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !strings.HasPrefix(r.RequestURI, "/"):
		page(w, http.StatusBadRequest, pageRefused)
		cb.refused("wrong Host header (absolute-form request)")
		return
	case r.URL.Path != "/callback":
		page(w, http.StatusNotFound, pageNotFound)
		return
	case r.Method != http.MethodGet:
		w.Header().Set("Allow", http.MethodGet)
		page(w, http.StatusMethodNotAllowed, pageNoMethods)
		return
	case r.Host != cb.host:
		page(w, http.StatusBadRequest, pageRefused)
		cb.refused("wrong Host header")
		return
	case cb.accepted.Load():
		page(w, http.StatusGone, pageGone)
		return
	}
	q := r.URL.Query()
	got := q.Get("state")
	want := cb.state.Load()
	if want == nil || len(q["state"]) != 1 || subtle.ConstantTimeCompare([]byte(got), []byte(*want)) != 1 {
		page(w, http.StatusBadRequest, pageRefused)
		if got == "" {
			cb.refused("no state parameter")
		} else {
			cb.refused("state mismatch")
		}
		return
	}
	if !cb.accepted.CompareAndSwap(false, true) {
		page(w, http.StatusGone, pageGone)
		return
	}
	res := callbackParams(q)
	if res["code"] == "" || res["error"] != "" {
		page(w, http.StatusOK, pageNotDone)
	} else {
		page(w, http.StatusOK, pageDone)
	}
	cb.result <- res
}
