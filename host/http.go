package host

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// responseHeaders are the response headers a fact carries (lowercase names).
var responseHeaders = []string{"www-authenticate", "location", "content-type", "retry-after", "cache-control", "dpop-nonce"}

// request is an http.request need or an http.send effect, templates resolved.
type request struct {
	method, url string
	header      http.Header
	body        string
	secret      []string
	maxBytes    int64
	timeout     time.Duration
}

func timeoutOf(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 {
		return defaultTimeout, nil
	}
	var ms int64
	if err := json.Unmarshal(raw, &ms); err != nil || ms < 1 || time.Duration(ms)*time.Millisecond > maxTimeout {
		return 0, fmt.Errorf("host: timeout_ms out of range")
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (o *Op) buildRequest(p map[string]json.RawMessage) (*request, error) {
	r := &request{header: http.Header{}, maxBytes: defaultMaxBytes}
	if err := json.Unmarshal(p["method"], &r.method); err != nil || r.method == "" {
		return nil, errors.New("host: http.request needs a method")
	}
	var err error
	if r.url, err = o.templateString(p["url"]); err != nil {
		return nil, err
	}
	if raw, ok := p["headers"]; ok {
		h, err := o.resolve(raw)
		if err != nil {
			return nil, err
		}
		m, ok := h.(map[string]any)
		if !ok {
			return nil, errors.New("host: headers must be an object")
		}
		for k, v := range m {
			if v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("host: header %q is not a string", k)
			}
			r.header.Set(k, s)
		}
	}
	switch {
	case p["form"] != nil && p["json"] != nil:
		return nil, errors.New("host: a request has a form or a JSON body, not both")
	case p["form"] != nil:
		f, err := o.resolve(p["form"])
		if err != nil {
			return nil, err
		}
		if r.body, err = o.form(f); err != nil {
			return nil, err
		}
		r.header.Set("Content-Type", "application/x-www-form-urlencoded")
	case p["json"] != nil:
		v, err := o.resolve(p["json"])
		if err != nil {
			return nil, err
		}
		b, err := encodeValue(v)
		if err != nil {
			return nil, err
		}
		r.body = string(b)
		r.header.Set("Content-Type", "application/json")
	}
	if raw, ok := p["secret_fields"]; ok {
		if err := json.Unmarshal(raw, &r.secret); err != nil {
			return nil, fmt.Errorf("host: secret_fields: %w", err)
		}
	}
	if raw, ok := p["max_bytes"]; ok {
		if err := json.Unmarshal(raw, &r.maxBytes); err != nil || r.maxBytes < 1 || r.maxBytes > maxMaxBytes {
			return nil, errors.New("host: max_bytes out of range")
		}
	}
	if r.timeout, err = timeoutOf(p["timeout_ms"]); err != nil {
		return nil, err
	}
	return r, nil
}

// send performs the request. It answers the response as a fact, or {status: 0, error}.
func (o *Op) send(ctx context.Context, key string, r *request) (map[string]any, error) {
	if o.h.caps.HTTP == nil {
		return map[string]any{"status": 0, "error": "failed"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return map[string]any{"status": 0, "error": "failed"}, nil
	}
	req.Header = r.header
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := o.h.caps.HTTP.RoundTrip(req)
	if err != nil {
		return map[string]any{"status": 0, "error": transportError(ctx, err)}, nil
	}
	defer resp.Body.Close()
	fact := map[string]any{"status": resp.StatusCode}
	headers := map[string]any{}
	for _, h := range responseHeaders {
		if vs := resp.Header.Values(h); len(vs) > 0 {
			headers[h] = cut(strings.ToValidUTF8(strings.Join(vs, ", "), "\uFFFD"), 4096)
		}
	}
	fact["headers"] = headers
	b, err := io.ReadAll(io.LimitReader(resp.Body, r.maxBytes+1))
	if err != nil {
		return map[string]any{"status": 0, "error": transportError(ctx, err)}, nil
	}
	switch {
	case int64(len(b)) > r.maxBytes:
		fact["json"], fact["body"] = nil, "too_large"
	default:
		if j := o.redact(key, b, r.secret); j != nil {
			fact["json"] = j
		} else if v, err := jsonx.Decode(b); err == nil {
			fact["json"] = jsonx.FactValue(v)
		} else {
			fact["json"] = nil
			if len(strings.TrimSpace(string(b))) == 0 {
				fact["body"] = "empty"
			} else {
				fact["body"] = "not_json"
			}
		}
	}
	return fact, nil
}

func transportError(ctx context.Context, err error) string {
	var ne net.Error
	var re *tls.RecordHeaderError
	var ce *tls.CertificateVerificationError
	var de *net.DNSError
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &re), errors.As(err, &ce):
		return "tls"
	case errors.As(err, &de):
		return "dns"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "unreachable"
	}
	return "failed"
}

func (o *Op) httpRequest(ctx context.Context, key string, p map[string]json.RawMessage) (any, error) {
	r, err := o.buildRequest(p)
	if err != nil {
		return nil, err
	}
	return o.send(ctx, key, r)
}
