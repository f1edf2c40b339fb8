package mcpremote

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/grantwire/grantwire/mcp"
)

// DPoP (RFC 9449, SEP-1932) on the requests to the server. The MCP Go SDK sets
// `Authorization: Bearer <token>` from the Handler's token source; for a token the policy
// handed out as DPoP-bound, Transport sends it as `Authorization: DPoP <token>` with a
// fresh proof of the token's key (htm, htu, ath, the server's nonce), and answers one
// 401 `WWW-Authenticate: DPoP error="use_dpop_nonce"` with a DPoP-Nonce by sending the
// request again with that nonce, as many times as the policy allows
// (mcp.DPoPKey.NonceRetries). A bearer token passes unchanged.

// Transport wraps next (nil: http.DefaultTransport) with the DPoP side of the Handler's
// tokens.
func (h *Handler) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &dpopTransport{h: h, next: next}
}

// WithDPoP returns a copy of hc whose transport is h.Transport(hc's transport).
func (h *Handler) WithDPoP(hc *http.Client) *http.Client {
	c := *hc
	c.Transport = h.Transport(hc.Transport)
	return &c
}

type dpopTransport struct {
	h    *Handler
	next http.RoundTripper

	mu    sync.Mutex
	nonce string // the server's last DPoP-Nonce (RFC 9449 §9)
}

// bound is the token the request carries when it is the Handler's current DPoP-bound one.
func (t *dpopTransport) bound(r *http.Request) (string, *mcp.DPoPKey) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return "", nil
	}
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	if c := t.h.current; c != nil && c.DPoP != nil && c.AccessToken == tok {
		return tok, c.DPoP
	}
	return "", nil
}

func (t *dpopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, key := t.bound(r)
	if key == nil {
		return t.next.RoundTrip(r)
	}
	body, err := replayable(r)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	nonce := t.nonce
	t.mu.Unlock()
	for attempt := 0; ; attempt++ {
		proof, err := key.Proof(r.Method, r.URL.String(), tok, nonce)
		if err != nil {
			return nil, err
		}
		out := r.Clone(r.Context())
		out.Header.Set("Authorization", "DPoP "+tok)
		out.Header.Set("DPoP", proof)
		if body != nil {
			out.Body, out.GetBody = body()
		}
		resp, err := t.next.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		n := resp.Header.Get("DPoP-Nonce")
		if n != "" {
			t.mu.Lock()
			t.nonce = n
			t.mu.Unlock()
		}
		if resp.StatusCode != http.StatusUnauthorized || n == "" || n == nonce || !asksNonce(resp) || attempt >= key.NonceRetries {
			return resp, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		nonce = n
	}
}

// asksNonce: a DPoP challenge with error use_dpop_nonce (RFC 9449 §9).
func asksNonce(resp *http.Response) bool {
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if strings.Contains(v, "use_dpop_nonce") {
			return true
		}
	}
	return false
}

// replayable returns a function giving a fresh copy of the request's body for each
// attempt (nil for a request without one).
func replayable(r *http.Request) (func() (io.ReadCloser, func() (io.ReadCloser, error)), error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.GetBody != nil {
		r.Body.Close() // each attempt sends a copy
		return func() (io.ReadCloser, func() (io.ReadCloser, error)) {
			b, err := r.GetBody()
			if err != nil {
				return io.NopCloser(bytes.NewReader(nil)), r.GetBody
			}
			return b, r.GetBody
		}, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return func() (io.ReadCloser, func() (io.ReadCloser, error)) {
		rc, _ := get()
		return rc, get
	}, nil
}
