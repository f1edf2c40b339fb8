// Package opaserver is the engine that asks an OPA server for every decision: the server
// runs grantwire's published bundle (`grantwire policy build`, `make bundle`), and each
// query goes to its Data API as POST /v1/data/grantwire/decide with the query as input.
// The manifest comes from data.grantwire.manifest, the catalog the policy decides with
// from data.catalog, the policy's revision from the bundle's (OPA's provenance).
//
// It is how a team runs grantwire's decisions on a fleet of OPA servers, with OPA's own
// bundle service, decision logs and status API (docs/fleet.md): grantwire has no
// distribution layer of its own. The decisions are the same, byte for byte, as every other
// engine's (the conformance corpus runs on an OPA server: TestOPAServer).
//
// It uses the standard library's HTTP client only and links no package of OPA.
package opaserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Paths of the Data API the engine reads.
const (
	DecidePath   = "/v1/data/grantwire/decide"
	ManifestPath = "/v1/data/grantwire/manifest"
	CatalogPath  = "/v1/data/catalog"
)

// maxResponse bounds a response body (a listing's decision on a large world is a few MB).
const maxResponse = 64 << 20

type config struct {
	client *http.Client
	header http.Header
}

// Option configures an [Engine].
type Option func(*config)

// WithHTTPClient sends the requests with client (timeouts, TLS, proxies) instead of the
// engine's own (a clone of http.DefaultTransport, 30 s per request).
func WithHTTPClient(client *http.Client) Option { return func(c *config) { c.client = client } }

// WithHeader adds a header to every request, for example Authorization: Bearer <token>
// for an OPA server started with --authentication=token.
func WithHeader(key, value string) Option { return func(c *config) { c.header.Add(key, value) } }

// Engine decides by asking an OPA server. It is safe for concurrent use.
type Engine struct {
	base     string
	client   *http.Client
	header   http.Header
	manifest *core.Manifest
	catalog  json.RawMessage
	revision string
}

// New checks that the server at rawURL (http://host:8181, or a prefix the server's API is
// mounted under) serves grantwire's policy: it reads the manifest, the catalog and the
// bundle's revision.
func New(ctx context.Context, rawURL string, opts ...Option) (*Engine, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("opaserver: %q is not an http(s) URL of an OPA server", rawURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("opaserver: %q: the URL of an OPA server has no query or fragment", rawURL)
	}
	c := config{header: http.Header{}}
	for _, o := range opts {
		o(&c)
	}
	if c.client == nil {
		c.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 30 * time.Second}
	}
	e := &Engine{base: strings.TrimSuffix(u.String(), "/"), client: c.client, header: c.header}

	res, prov, err := e.get(ctx, ManifestPath+"?provenance")
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("opaserver: %s serves no data.grantwire.manifest: is grantwire's bundle loaded?", e.base)
	}
	if e.manifest, err = core.ParseManifest(res); err != nil {
		return nil, fmt.Errorf("opaserver: %s: data.grantwire.manifest is not grantwire's manifest: %w", e.base, err)
	}
	e.revision = prov.revision()
	if e.catalog, _, err = e.get(ctx, CatalogPath); err != nil {
		return nil, err
	}
	return e, nil
}

type provenance struct {
	Bundles map[string]struct {
		Revision string `json:"revision"`
	} `json:"bundles"`
}

// revision is the revision of the bundle that holds grantwire's policy: the bundle named
// grantwire (as a bundle service configuration names it), else the only bundle with a
// revision (a server may run other bundles beside it, such as a decision-log mask).
func (p *provenance) revision() string {
	if p == nil {
		return ""
	}
	if b, ok := p.Bundles["grantwire"]; ok {
		return b.Revision
	}
	rev := ""
	for _, b := range p.Bundles {
		if b.Revision != "" {
			if rev != "" {
				return ""
			}
			rev = b.Revision
		}
	}
	return rev
}

type response struct {
	Result     json.RawMessage `json:"result"`
	Provenance *provenance     `json:"provenance"`
	Code       string          `json:"code"`
	Message    string          `json:"message"`
}

func (e *Engine) get(ctx context.Context, path string) (json.RawMessage, *provenance, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+path, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("opaserver: %w", err)
	}
	r, err := e.do(req)
	if err != nil {
		return nil, nil, err
	}
	return r.Result, r.Provenance, nil
}

func (e *Engine) do(req *http.Request) (*response, error) {
	for k, vs := range e.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("opaserver: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("opaserver: %s %s: %w", req.Method, req.URL.Path, err)
	}
	if len(body) > maxResponse {
		return nil, fmt.Errorf("opaserver: %s %s: response larger than %d bytes", req.Method, req.URL.Path, maxResponse)
	}
	var r response
	jerr := json.Unmarshal(body, &r)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if jerr == nil && r.Code != "" {
			msg = r.Code + ": " + r.Message
		}
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		return nil, fmt.Errorf("opaserver: %s %s: %s: %s", req.Method, req.URL.Path, resp.Status, msg)
	}
	if jerr != nil {
		return nil, fmt.Errorf("opaserver: %s %s: the response is not JSON: %w", req.Method, req.URL.Path, jerr)
	}
	return &r, nil
}

// DecideJSON sends the query to the server and appends the canonical decision to dst.
func (e *Engine) DecideJSON(ctx context.Context, dst, query []byte) ([]byte, error) {
	if err := core.CheckQuery(query); err != nil {
		return dst, err
	}
	body := make([]byte, 0, len(query)+10)
	body = append(append(append(body, `{"input":`...), query...), '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+DecidePath, bytes.NewReader(body))
	if err != nil {
		return dst, fmt.Errorf("opaserver: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	r, err := e.do(req)
	if err != nil {
		return dst, err
	}
	if r.Result == nil {
		return dst, core.ErrUndefined
	}
	out, err := jsonx.Append(dst, r.Result)
	if err != nil {
		return dst, fmt.Errorf("opaserver: the decision is not JSON: %w", err)
	}
	return out, nil
}

// Decide answers a typed query.
func (e *Engine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	return core.DecideTyped(ctx, e, q)
}

// Manifest returns what the server's policy publishes about its operations.
func (e *Engine) Manifest() *core.Manifest { return e.manifest }

// Catalog returns the catalog the server's policy decides with (its data.catalog, as JSON),
// nil when the server has none.
func (e *Engine) Catalog() json.RawMessage { return e.catalog }

// Revision returns the revision of the bundle the server runs ("" when OPA reports none).
func (e *Engine) Revision() string { return e.revision }

// URL returns the server's URL.
func (e *Engine) URL() string { return e.base }

// Name returns "opa-server".
func (e *Engine) Name() string { return "opa-server" }

// Close releases the idle connections of the engine's HTTP client.
func (e *Engine) Close(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// ErrNotServer is returned by Parse for an --engine value that is not opa-server=URL.
var ErrNotServer = errors.New("opaserver: not opa-server=URL")

// Parse reads the CLI's engine spelling "opa-server=URL" and returns the URL.
func Parse(spec string) (string, error) {
	u, ok := strings.CutPrefix(spec, "opa-server=")
	if !ok || u == "" {
		return "", ErrNotServer
	}
	return u, nil
}
