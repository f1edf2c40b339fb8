package mcp_test

// Hostile remote MCP servers under fuzzing (issue 14, "Hostile servers"): the four inputs a
// remote MCP server or its authorization server controls — the WWW-Authenticate challenge,
// the protected-resource metadata document, the authorization-server metadata document and
// the dynamic-registration answer — are fuzzed while the rest of the world answers well, and
// the whole mcp_auth operation runs: the Go host turns each HTTP answer into a fact (size
// cap, secret fields described), and every query goes to the wasm and native engines, which
// must answer byte for byte alike and without an engine error. Whatever the input:
//   - the outcome is a result or a *grantwire.Error (with a message and a code);
//   - a refusal stores nothing (no keyring slot of the server, no authorization mirror);
//   - no planted secret (the registration's client secret and registration token, the
//     authorization code, the access and refresh tokens) appears in any query or decision
//     (so in no decision log), error, event or file.
//
// make test runs the seeds; make fuzz runs each target (scripts/fuzz.sh). Longer:
//
//	go test . -run '^$' -fuzz FuzzRemoteDCR -fuzztime 5m

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/mcp"
)

const (
	fzServer   = "https://mcp.example.com/mcp"
	fzIssuer   = "https://auth.example.com"
	fzPRMURL   = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	fzRedirect = "http://127.0.0.1:49152/callback"
	// Planted secrets: what the servers issue. None may reach the core, an error, an
	// event or a file.
	fzClientSecret = "fz-client-secret-6b1d0e"
	fzRegToken     = "fz-registration-token-9c2a"
	fzCode         = "fz-code-77e1a0"
	fzAccess       = "fz-access-token-41d7c3"
	fzRefresh      = "fz-refresh-token-0e5f88"
)

var fzPlanted = []string{fzClientSecret, fzRegToken, fzCode, fzAccess, fzRefresh}

const fzChallenge = `Bearer resource_metadata="` + fzPRMURL + `", scope="files:read"`

const fzPRM = `{"resource":"` + fzServer + `","authorization_servers":["` + fzIssuer + `"],"scopes_supported":["files:read","files:write"]}`

const fzAS = `{"issuer":"` + fzIssuer + `","authorization_endpoint":"` + fzIssuer + `/authorize","token_endpoint":"` + fzIssuer +
	`/token","registration_endpoint":"` + fzIssuer + `/register","revocation_endpoint":"` + fzIssuer +
	`/revoke","code_challenge_methods_supported":["S256"],"response_types_supported":["code"],` +
	`"scopes_supported":["files:read","files:write","offline_access"],"authorization_response_iss_parameter_supported":true}`

const fzDCR = `{"client_id":"fz-client-1","client_secret":"x","registration_access_token":"x","redirect_uris":["` + fzRedirect +
	`"],"token_endpoint_auth_method":"client_secret_basic","client_name":"grantwire"}`

// fzWorld is what the remote server and its authorization server answer in one run.
type fzWorld struct {
	challenge string // the 401's WWW-Authenticate
	prm, as   []byte // metadata documents
	dcr       []byte // the registration answer
	// huge, when set, replaces the authorization-server metadata with a JSON document of
	// that many bytes, made as it is read; served counts the bytes read of it.
	huge, served int64
}

// hugeDoc is a JSON object of n bytes, made as it is read.
type hugeDoc struct {
	n, off int64
	count  *int64
}

func (h *hugeDoc) Read(p []byte) (int, error) {
	if h.off >= h.n {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(p) && h.off < h.n; i, h.off = i+1, h.off+1 {
		switch {
		case h.off < 8:
			p[i] = `{"pad":"`[h.off]
		case h.off >= h.n-2:
			p[i] = `"}`[h.off-(h.n-2)]
		default:
			p[i] = 'a'
		}
	}
	*h.count += int64(i)
	return i, nil
}

func (fw *fzWorld) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	u := *r.URL
	u.RawQuery = ""
	status, body, h := http.StatusNotFound, []byte(`{"error":"not_found"}`), http.Header{"Content-Type": {"application/json"}}
	switch u.String() {
	case fzServer:
		status, body = http.StatusUnauthorized, []byte("unauthorized")
		h.Set("WWW-Authenticate", fw.challenge)
	case fzPRMURL, "https://mcp.example.com/.well-known/oauth-protected-resource":
		status, body = http.StatusOK, fw.prm
	case fzIssuer + "/.well-known/oauth-authorization-server", fzIssuer + "/.well-known/openid-configuration":
		status, body = http.StatusOK, fw.as
	case fzIssuer + "/register":
		status, body = http.StatusCreated, fw.dcr
	case fzIssuer + "/token":
		status, body = http.StatusOK, []byte(`{"access_token":"`+fzAccess+`","refresh_token":"`+fzRefresh+
			`","token_type":"Bearer","expires_in":3600,"scope":"files:read offline_access"}`)
	}
	var rd io.Reader = bytes.NewReader(body)
	if fw.huge > 0 && bytes.Equal(body, fw.as) && status == http.StatusOK {
		rd = &hugeDoc{n: fw.huge, count: &fw.served}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(rd), Request: r}, nil
}

// fzLoopback is the user consenting at once: the callback carries the planted code and
// the issuer (RFC 9207).
type fzLoopback struct{}

func (fzLoopback) Open(context.Context, string, string) (hostabi.Callback, error) {
	return fzCallback{}, nil
}

type fzCallback struct{}

func (fzCallback) RedirectURI() string { return fzRedirect }
func (fzCallback) Close() error        { return nil }
func (fzCallback) Wait(_ context.Context, a hostabi.Authorization) (map[string]string, error) {
	return map[string]string{"code": fzCode, "state": a.State, "iss": fzIssuer}, nil
}

// diffEngine asks every engine and fails the test when they differ by one byte, when one
// errs, or when a query or decision holds a planted secret.
type diffEngine struct {
	t       *testing.T
	engines []core.Engine
}

func (d *diffEngine) DecideJSON(ctx context.Context, dst, q []byte) ([]byte, error) {
	out, err := d.engines[0].DecideJSON(ctx, nil, q)
	if err != nil {
		d.t.Fatalf("%s engine error: %v\nquery: %s", d.engines[0].Name(), err, q)
	}
	for _, e := range d.engines[1:] {
		o, err := e.DecideJSON(ctx, nil, q)
		if err != nil || !bytes.Equal(out, o) {
			d.t.Fatalf("engines disagree\nquery: %s\n%s: %s\n%s: %s (err %v)", q, d.engines[0].Name(), out, e.Name(), o, err)
		}
	}
	for _, s := range fzPlanted {
		if bytes.Contains(q, []byte(s)) || bytes.Contains(out, []byte(s)) {
			d.t.Fatalf("a planted secret (%s) reached the core\nquery: %s\ndecision: %s", s, q, out)
		}
	}
	return append(dst, out...), nil
}

func (d *diffEngine) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	raw, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	out, err := d.DecideJSON(ctx, nil, raw)
	if err != nil {
		return nil, err
	}
	return core.ParseDecision(out)
}

func (d *diffEngine) Manifest() *core.Manifest        { return d.engines[0].Manifest() }
func (d *diffEngine) Name() string                    { return "diff" }
func (d *diffEngine) Close(ctx context.Context) error { return nil }

var (
	fzOnce    sync.Once
	fzEngines []core.Engine
	fzCat     *catalog.Catalog
	fzErr     error
)

func fzSetup(tb testing.TB) {
	fzOnce.Do(func() {
		ctx := context.Background()
		fzCat = catalog.Default()
		var w, n core.Engine
		if w, fzErr = wasmengine.New(ctx, wasmengine.WithData(fzCat.Data())); fzErr != nil {
			return
		}
		if n, fzErr = nativeengine.New(ctx, nativeengine.WithData(fzCat.Data())); fzErr != nil {
			return
		}
		fzEngines = []core.Engine{w, n}
	})
	if fzErr != nil {
		tb.Fatal(fzErr)
	}
}

// fzAuth adds the server and authorizes it against fw, then checks the properties above.
// args are the mcp_auth options (a challenge given by the caller, a step-up).
func fzAuth(t *testing.T, fw *fzWorld, o mcp.AuthOptions) (*mcp.AuthResult, error) {
	t.Helper()
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	caps := w.Capabilities("")
	caps.HTTP, caps.Loopback = fw, fzLoopback{}
	var observed []grantwire.Decision
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps), grantwire.WithCatalog(fzCat),
		grantwire.WithEngine(&diffEngine{t: t, engines: fzEngines}),
		grantwire.WithObserver(func(d grantwire.Decision) { observed = append(observed, d) }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := mcp.Of(c).AddServer(ctx, mcp.RemoteServer{ID: "notes", URL: fzServer}); err != nil {
		t.Fatalf("mcp add: %v", err)
	}
	before := w.File("mcp_remote.json")
	res, err := mcp.Of(c).Authorize(ctx, "notes", o)
	var texts []string
	if err != nil {
		var ge *grantwire.Error
		if !errors.As(err, &ge) || ge.Code == "" || ge.Message == "" {
			t.Fatalf("a refusal that is not a grantwire error: %#v", err)
		}
		texts = append(texts, ge.Error(), ge.Summary, ge.Fix)
		for user := range w.Keyring() {
			if strings.Contains(user, "notes:") {
				t.Fatalf("refused (%s: %s) but stored keyring slot %q", ge.Code, ge.Message, user)
			}
		}
		if !bytes.Equal(before, w.File("mcp_remote.json")) {
			t.Fatalf("refused (%s: %s) but mcp_remote.json changed", ge.Code, ge.Message)
		}
	} else {
		raw, _ := json.Marshal(res)
		texts = append(texts, string(raw))
		if _, ok := w.Keyring()[hostabi.DefaultService+"\x00notes:mcp_token"]; !ok {
			t.Fatalf("authorized but stored no token: %v", w.Keyring())
		}
	}
	for _, d := range observed {
		texts = append(texts, string(d.Result), string(d.Input), string(d.Output))
	}
	for _, ev := range w.Events() {
		raw, _ := json.Marshal(ev)
		texts = append(texts, string(raw))
	}
	for _, name := range w.Files() {
		texts = append(texts, string(w.File(name)))
	}
	all := strings.Join(texts, "\n")
	for _, s := range fzPlanted {
		if strings.Contains(all, s) {
			t.Fatalf("a planted secret (%s) leaked into an output, event or file:\n%s", s, all)
		}
	}
	return res, err
}

// TestRemoteFuzzWorld: the fuzz targets' world authorizes when nothing is hostile (so the
// targets reach every step), and refuses a registration answer with a javascript: URI.
func TestRemoteFuzzWorld(t *testing.T) {
	fzSetup(t)
	res, err := fzAuth(t, fzGood(), mcp.AuthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Issuer != fzIssuer || res.Registration != "dynamic" || !res.RefreshToken {
		t.Fatalf("unexpected result %+v", res)
	}
	fw := fzGood()
	fw.dcr = fzPlant([]byte(`{"client_id":"c","redirect_uris":["` + fzRedirect + `"],"logo_uri":"javascript:alert(1)"}`))
	_, err = fzAuth(t, fw, mcp.AuthOptions{})
	var ge *grantwire.Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Message, "logo_uri is refused") {
		t.Fatalf("a javascript: logo_uri gave %v", err)
	}

	// 10 MB of metadata: refused, and read no further than the cap (memory stays bounded).
	fw = fzGood()
	fw.huge = 10 << 20
	_, err = fzAuth(t, fw, mcp.AuthOptions{})
	if !errors.As(err, &ge) || !strings.Contains(ge.Message, "answered with more than 1 MiB") {
		t.Fatalf("10 MB of metadata gave %v", err)
	}
	if fw.served > 1<<20+1 || fw.served < 1<<20 {
		t.Fatalf("read %d bytes of a 10 MB document, want the 1 MiB cap and one byte", fw.served)
	}
}

func fzGood() *fzWorld {
	return &fzWorld{challenge: fzChallenge, prm: []byte(fzPRM), as: []byte(fzAS), dcr: fzPlant([]byte(fzDCR))}
}

// fzPlant puts the planted secrets in a registration answer that is a JSON object (its
// client_secret and registration_access_token, members the host describes as secrets);
// anything else is served as it is.
func fzPlant(b []byte) []byte {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return b
	}
	m["client_secret"], m["registration_access_token"] = fzClientSecret, fzRegToken
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// FuzzRemoteChallenge fuzzes the WWW-Authenticate value: of the server's 401 to the probe,
// and given by the proxy after a 403 (a step-up).
func FuzzRemoteChallenge(f *testing.F) {
	fzSetup(f)
	for _, s := range []string{
		fzChallenge, ``, `Bearer`, `Basic realm="x", Bearer scope="a b"`,
		`Bearer resource_metadata="http://evil.example.com/prm"`,
		`Bearer resource_metadata="javascript:alert(1)", scope="files:read"`,
		`Bearer error="insufficient_scope", scope="files:write", resource_metadata="` + fzPRMURL + `"`,
		`Bearer realm="a\"b\\", error=insufficient_scope, scope="x y z", scope="w"`,
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple", Bearer abc== , scope=q`,
		"Bearer scope=\"\xff\", resource_metadata=\"" + fzPRMURL + "\"",
		strings.Repeat(`Bearer a=b, `, 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		fw := fzGood()
		fw.challenge = h
		_, _ = fzAuth(t, fw, mcp.AuthOptions{})
		if len(h) <= 16384 && h != "" {
			_, _ = fzAuth(t, fzGood(), mcp.AuthOptions{WWWAuthenticate: h, Status: http.StatusForbidden, StepUp: 1})
		}
	})
}

// FuzzRemotePRM fuzzes the protected-resource metadata document (RFC 9728).
func FuzzRemotePRM(f *testing.F) {
	fzDocument(f, func(fw *fzWorld, doc []byte) { fw.prm = doc }, []string{
		fzPRM, ``, `null`, `[]`, `{}`, `{"resource":"` + fzServer + `"}`,
		`{"resource":"https://other.example.com/mcp","authorization_servers":["` + fzIssuer + `"]}`,
		`{"resource":"` + fzServer + `","authorization_servers":["http://auth.example.com"]}`,
		`{"resource":"` + fzServer + `","authorization_servers":["javascript:alert(1)"]}`,
		`{"resource":"` + fzServer + `#x","authorization_servers":["` + fzIssuer + `"]}`,
		`{"resource":"https://mcp.example.com","authorization_servers":["` + fzIssuer + `?x"],"scopes_supported":"files:read"}`,
		`{"resource":"` + fzServer + `","authorization_servers":["` + fzIssuer + `/tenant"],"scopes_supported":[1,2]}`,
		`{"resource":"` + fzServer + `","resource":"https://x","authorization_servers":["` + fzIssuer + `"]}`,
		"{\"resource\":\"" + fzServer + "\xff\",\"authorization_servers\":[\"" + fzIssuer + "\"]}",
	})
}

// fzDocument fuzzes one document the world serves: put places the fuzzed bytes (the seeds
// first) in a good world, which is then authorized against.
func fzDocument(f *testing.F, put func(fw *fzWorld, doc []byte), seeds []string) {
	fzSetup(f)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		fw := fzGood()
		put(fw, doc)
		_, _ = fzAuth(t, fw, mcp.AuthOptions{})
	})
}

// FuzzRemoteASMetadata fuzzes the authorization-server metadata document (RFC 8414).
func FuzzRemoteASMetadata(f *testing.F) {
	var good map[string]any
	if err := json.Unmarshal([]byte(fzAS), &good); err != nil {
		f.Fatal(err)
	}
	variant := func(k string, v any) string {
		m := map[string]any{}
		for kk, vv := range good {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	fzDocument(f, func(fw *fzWorld, doc []byte) { fw.as = doc }, []string{
		fzAS, ``, `null`, `{}`, `[1]`,
		variant("issuer", "https://evil.example.com"), variant("issuer", fzIssuer+"/"),
		variant("code_challenge_methods_supported", []string{"plain"}),
		variant("code_challenge_methods_supported", nil),
		variant("token_endpoint", "http://auth.example.com/token"),
		variant("authorization_endpoint", "javascript:alert(1)"),
		variant("registration_endpoint", "data:text/html,x"),
		variant("revocation_endpoint", 7),
		variant("response_types_supported", []string{"token"}),
		variant("token_endpoint_auth_methods_supported", []string{"private_key_jwt"}),
		variant("scopes_supported", "offline_access"),
		variant("client_id_metadata_document_supported", true),
	})
}

// FuzzRemoteDCR fuzzes the dynamic client registration answer (RFC 7591). An answer that is
// a JSON object gets the planted client secret and registration access token.
func FuzzRemoteDCR(f *testing.F) {
	fzDocument(f, func(fw *fzWorld, doc []byte) { fw.dcr = fzPlant(doc) }, []string{
		fzDCR, ``, `null`, `{}`, `[]`, `{"client_id":7}`, `{"client_id":""}`,
		`{"client_id":"c","redirect_uris":["javascript:alert(1)"]}`,
		`{"client_id":"c","redirect_uris":["http://127.0.0.1:1/other"]}`,
		`{"client_id":"c","logo_uri":"javascript:alert(document.cookie)"}`,
		`{"client_id":"c","client_uri":"http://evil.example.com","tos_uri":"https://x"}`,
		`{"client_id":"c","policy_uri":7,"jwks_uri":"file:///etc/passwd"}`,
		`{"client_id":"c","token_endpoint_auth_method":"private_key_jwt"}`,
		`{"client_id":"c","token_endpoint_auth_method":"client_secret_post","redirect_uris":null}`,
		`{"client_id":"c","client_id":"d"}`, "{\"client_id\":\"c\xff\"}",
		`{"error":"invalid_redirect_uri"}`,
	})
}
