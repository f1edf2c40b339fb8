package host_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
)

func need(t *testing.T, s string) core.Need {
	t.Helper()
	var n core.Need
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}

func effects(t *testing.T, s string) []core.Effect {
	t.Helper()
	var e []core.Effect
	require.NoError(t, json.Unmarshal([]byte(s), &e))
	return e
}

func fetch(t *testing.T, op hostabi.Performer, s string) map[string]any {
	t.Helper()
	raw, err := op.Fetch(context.Background(), need(t, s))
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func world() (*memhost.World, *host.Host) {
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	return w, host.New(w.Capabilities(""))
}

const svc = hostabi.DefaultService

// keyring.get answers descriptions, never values, and parses JSON with the named
// members redacted; other members (numbers beyond integers included) pass as they are.
func TestKeyringGetRedacts(t *testing.T) {
	w, h := world()
	w.SetKeyring(svc, "p:default", `{"refresh_token":"rt-secret","scopes":["a"],"connected_at":1790000000.123}`)
	op := h.Begin("t")
	f := fetch(t, op, `{"key":"conn","kind":"keyring.get","user":"p:default","fields":["refresh_token"],"fresh":true}`)
	b, _ := json.Marshal(f)
	require.NotContains(t, string(b), "rt-secret")
	j := f["json"].(map[string]any)
	rt := j["refresh_token"].(map[string]any)
	require.Equal(t, "conn#refresh_token", rt["$ref"])
	require.Equal(t, host.Digest("rt-secret"), rt["digest"])
	require.Equal(t, host.CRC32("rt-secret"), rt["crc32"])
	require.Equal(t, map[string]any{"$number": "1790000000.123"}, j["connected_at"])
	v, ok := op.Secret("conn#refresh_token")
	require.True(t, ok)
	require.Equal(t, "rt-secret", v)
	raw, _ := op.Secret("conn#value")
	require.Equal(t, `{"refresh_token":"rt-secret","scopes":["a"],"connected_at":1790000000.123}`, raw)

	// Not a JSON object: json is null; a missing slot: found false.
	w.SetKeyring(svc, "p:bad", `not json`)
	f = fetch(t, op, `{"key":"bad","kind":"keyring.get","user":"p:bad","fields":["x"],"fresh":true}`)
	require.Nil(t, f["json"])
	f = fetch(t, op, `{"key":"none","kind":"keyring.get","user":"p:none","fresh":true}`)
	require.Equal(t, map[string]any{"found": false}, f)
}

// fresh:false answers from the process's memory of the slot; fresh:true reads the store.
func TestKeyringMemory(t *testing.T) {
	w, h := world()
	w.SetKeyring(svc, "provider:p", `{"client_id":"one"}`)
	op := h.Begin("t")
	fetch(t, op, `{"key":"a","kind":"keyring.get","user":"provider:p","fields":["client_id"],"fresh":false}`)
	w.SetKeyring(svc, "provider:p", `{"client_id":"two"}`) // another process
	f := fetch(t, op, `{"key":"b","kind":"keyring.get","user":"provider:p","fields":["client_id"],"fresh":false}`)
	require.Equal(t, host.CRC32("one"), f["json"].(map[string]any)["client_id"].(map[string]any)["crc32"])
	f = fetch(t, op, `{"key":"c","kind":"keyring.get","user":"provider:p","fields":["client_id"],"fresh":true}`)
	require.Equal(t, host.CRC32("two"), f["json"].(map[string]any)["client_id"].(map[string]any)["crc32"])
}

// Templates: references, numbers, concatenation, PKCE S256, Basic credentials, URLs.
func TestTemplates(t *testing.T) {
	w, h := world()
	op := h.Begin("t")
	op.Describe("arg#id", "client id")
	op.Describe("arg#secret", "s3cr:t")
	op.Describe("arg#verifier", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
	require.NoError(t, op.Apply(context.Background(), effects(t, `[
		{"kind":"keyring.set","user":"u1","value":{"a":{"$ref":"arg#id"},"t":{"$number":"1790000000.123"},"n":7}},
		{"kind":"keyring.set","user":"u2","value":{"$concat":["Bearer ",{"$ref":"arg#id"}]}},
		{"kind":"keyring.set","user":"u3","value":{"$s256":{"$ref":"arg#verifier"}}},
		{"kind":"keyring.set","user":"u4","value":{"$basic":[{"$ref":"arg#id"},{"$ref":"arg#secret"}]}},
		{"kind":"keyring.set","user":"u5","value":{"$url":"https://as.example/auth?x=1","query":{"b":"2 3","a":{"$ref":"arg#id"},"z":null}}},
		{"kind":"keyring.set","user":"u6","value":{"k":{"$keyring":"svc:user"}}}
	]`)))
	k := w.Keyring()
	require.Equal(t, `{"a":"client id","n":7,"t":1790000000.123}`, k[svc+"\x00u1"])
	require.Equal(t, "Bearer client id", k[svc+"\x00u2"])
	require.Equal(t, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", k[svc+"\x00u3"], "RFC 7636 appendix B")
	cred, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(k[svc+"\x00u4"], "Basic "))
	require.Equal(t, "client+id:s3cr%3At", string(cred), "RFC 6749 §2.3.1: form-encoded, then base64")
	require.Equal(t, "https://as.example/auth?x=1&a=client+id&b=2+3", k[svc+"\x00u5"])
	require.Equal(t, `{"k":{"$keyring":"svc:user"}}`, k[svc+"\x00u6"], "unknown $-members are literal")

	err := op.Apply(context.Background(), effects(t, `[{"kind":"keyring.set","user":"u","value":{"$ref":"nope#x"}}]`))
	require.ErrorContains(t, err, "unknown secret reference")
}

// ledger.read answers the value at a path, whether it exists, and the shape on the way;
// a file that is not strict JSON is corrupt and is never rewritten.
func TestLedgerReadAndWrite(t *testing.T) {
	w, h := world()
	ctx := context.Background()
	op := h.Begin("t")
	f := fetch(t, op, `{"key":"g","kind":"ledger.read","ledger":"connectors/grants.json","path":["c","a"]}`)
	require.Equal(t, false, f["found"])
	require.NoError(t, op.Apply(ctx, effects(t, `[{"kind":"ledger.write","ledger":"connectors/grants.json","ops":[
		{"path":["c","a"],"value":["s"],"expect":{"exists":false}},
		{"path":["c","b"],"value":["t"]}]}]`)))
	require.Equal(t, "{\n  \"c\": {\n    \"a\": [\n      \"s\"\n    ],\n    \"b\": [\n      \"t\"\n    ]\n  }\n}\n", string(w.File("connectors/grants.json")))
	f = fetch(t, op, `{"key":"g2","kind":"ledger.read","ledger":"connectors/grants.json","path":["c","a"]}`)
	require.Equal(t, true, f["exists"])
	require.Equal(t, []any{"s"}, f["value"])
	require.Equal(t, []any{"object", "object", "array"}, f["shape"])

	// A stale expectation is a conflict, and nothing changes.
	err := op.Apply(ctx, effects(t, `[{"kind":"ledger.write","ledger":"connectors/grants.json","ops":[
		{"path":["c","a"],"delete":true,"expect":{"value":["other"]}}]}]`))
	require.ErrorIs(t, err, hostabi.ErrConflict)
	// prune removes the parent left empty.
	require.NoError(t, op.Apply(ctx, effects(t, `[{"kind":"ledger.write","ledger":"connectors/grants.json","ops":[
		{"path":["c","a"],"delete":true,"prune":true},{"path":["c","b"],"delete":true,"prune":true}]}]`)))
	require.Equal(t, "{}\n", string(w.File("connectors/grants.json")))

	for name, doc := range map[string]string{
		"duplicate": `{"c": 1, "c": 2}`,
		"trailing":  `{} {}`,
		"not utf-8": "{\"c\": \"\xff\"}",
		"truncated": `{"c": [`,
		"deep":      strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		w.SetFile("x.json", []byte(doc))
		f := fetch(t, op, `{"key":"x","kind":"ledger.read","ledger":"x.json","path":[]}`)
		require.NotEmpty(t, f["corrupt"], name)
		err := op.Apply(ctx, effects(t, `[{"kind":"ledger.write","ledger":"x.json","ops":[{"path":["k"],"value":1}]}]`))
		var he *hostabi.HostError
		require.ErrorAs(t, err, &he, name)
		require.Equal(t, doc, string(w.File("x.json")), "%s: a corrupt file is never rewritten", name)
	}
}

// A run of effects with undo is a transaction: a failure puts back what was done.
func TestUndoRestoresATransaction(t *testing.T) {
	w, h := world()
	w.SetKeyring(svc, "a", "old-a")
	op := h.Begin("t")
	op.Describe("arg#v", "new")
	fetch(t, op, `{"key":"a","kind":"keyring.get","user":"a","fresh":true}`)
	w.Fail(memhost.Failure{Op: "set", User: "b", Err: errors.New("disk on fire")})
	err := op.Apply(context.Background(), effects(t, `[
		{"kind":"keyring.set","user":"a","value":{"$ref":"arg#v"},"undo":[{"kind":"keyring.set","user":"a","value":{"$ref":"a#value"}}]},
		{"kind":"keyring.set","user":"b","value":{"$ref":"arg#v"},"undo":[{"kind":"keyring.delete","user":"b"}]},
		{"kind":"keyring.set","user":"c","value":"never"}
	]`))
	var he *hostabi.HostError
	require.ErrorAs(t, err, &he)
	require.Contains(t, he.Detail, "disk on fire")
	k := w.Keyring()
	require.Equal(t, "old-a", k[svc+"\x00a"], "the first write was undone")
	require.NotContains(t, k, svc+"\x00c", "nothing after the failure was applied")
}

// http.request sends what the need says, never follows a redirect, caps the body and
// answers descriptions for the secret members.
func TestHTTPRequest(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		_ = r.ParseForm()
		body = r.PostForm.Encode()
		switch r.URL.Path {
		case "/token":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"at-secret","expires_in":60,"scope":"a b"}`))
		case "/redirect":
			http.Redirect(w, r, "/token", http.StatusFound)
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
		case "/html":
			_, _ = w.Write([]byte("<html>"))
		}
	}))
	defer srv.Close()
	w := memhost.New(time.Unix(1_790_000_000, 0), 1)
	caps := w.Capabilities("")
	caps.HTTP = srv.Client().Transport
	h := host.New(caps)
	op := h.Begin("t")
	op.Describe("arg#rt", "rt-secret")
	f := fetch(t, op, `{"key":"r","kind":"http.request","method":"POST","url":"`+srv.URL+`/token",
		"headers":{"X-Test":"1"},"form":{"grant_type":"refresh_token","refresh_token":{"$ref":"arg#rt"}},
		"secret_fields":["access_token"]}`)
	require.Equal(t, float64(200), f["status"])
	require.Equal(t, "grant_type=refresh_token&refresh_token=rt-secret", body)
	require.Equal(t, "1", got.Header.Get("X-Test"))
	require.Equal(t, "application/x-www-form-urlencoded", got.Header.Get("Content-Type"))
	j := f["json"].(map[string]any)
	require.Equal(t, "r#access_token", j["access_token"].(map[string]any)["$ref"])
	b, _ := json.Marshal(f)
	require.NotContains(t, string(b), "at-secret")

	f = fetch(t, op, `{"key":"r2","kind":"http.request","method":"GET","url":"`+srv.URL+`/redirect"}`)
	require.Equal(t, float64(302), f["status"], "redirects are answered, never followed")
	require.Contains(t, f["headers"].(map[string]any)["location"], "/token")
	f = fetch(t, op, `{"key":"r3","kind":"http.request","method":"GET","url":"`+srv.URL+`/big","max_bytes":1000}`)
	require.Equal(t, "too_large", f["body"])
	f = fetch(t, op, `{"key":"r4","kind":"http.request","method":"GET","url":"`+srv.URL+`/html"}`)
	require.Equal(t, "not_json", f["body"])
	require.Nil(t, f["json"])
	f = fetch(t, op, `{"key":"r5","kind":"http.request","method":"GET","url":"http://127.0.0.1:1/none","timeout_ms":2000}`)
	require.Equal(t, float64(0), f["status"])
	require.Equal(t, "refused", f["error"])
}
