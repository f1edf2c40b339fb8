package hostabi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/memhost"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

const schemaBase = "https://github.com/grantwire/grantwire/hostabi/schema/"

// unexercised are kinds of the ABI that no policy decision produces yet, with why. The
// schema test demands that every other kind occurs, and that these still do not (so the
// list shrinks when the policy starts using one).
var unexercised = map[string]string{
	hostabi.EffectLockRelease: "the policy never releases a lock early; the driver releases every lock when the operation ends",
	hostabi.NeedDPoPKey:       "no corpus scenario authorizes against a DPoP authorization server yet; the MCP conformance suite's auth/dpop and auth/dpop-nonce exercise it through the Go host",
}

// exchange is one question to the core and its answer, as JSON.
type exchange struct{ query, decision []byte }

// recorder wraps an engine and logs every question and answer, in order.
type recorder struct {
	core.Engine
	mu  *sync.Mutex
	log *[]exchange
}

func (r *recorder) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	in, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	out, err := r.Engine.DecideJSON(ctx, nil, in)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	*r.log = append(*r.log, exchange{in, out})
	r.mu.Unlock()
	return core.ParseDecision(out)
}

func compileSchemas(t *testing.T) *jsonschema.Compiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, err := filepath.Glob("schema/*.schema.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err, f)
		require.NoError(t, c.AddResource(schemaBase+filepath.Base(f), doc))
	}
	return c
}

// schemas compiles each schema on first use.
type schemas struct {
	t  *testing.T
	c  *jsonschema.Compiler
	by map[string]*jsonschema.Schema
}

func newSchemas(t *testing.T) *schemas {
	return &schemas{t: t, c: compileSchemas(t), by: map[string]*jsonschema.Schema{}}
}

func (s *schemas) validate(ref string, raw []byte) error {
	s.t.Helper()
	sch := s.by[ref]
	if sch == nil {
		var err error
		sch, err = s.c.Compile(schemaBase + ref)
		require.NoError(s.t, err, ref)
		s.by[ref] = sch
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(s.t, err)
	return sch.Validate(v)
}

// TestSchemasAgainstTheCorpus runs the whole conformance corpus on memhost (package host
// driven by hostabi.Driver), plus the operations that use the kinds the corpus does not
// (revocation at disconnect, an agent's source digest), and validates every query,
// decision and fact against hostabi/schema: each fact against the schema of the kind of
// the need that asked for it. Every need, fact and effect kind must occur.
func TestSchemasAgainstTheCorpus(t *testing.T) {
	var (
		mu  sync.Mutex
		log []exchange
	)
	factory := func(ctx context.Context, data []byte) (core.Engine, error) {
		e, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
		if err != nil {
			return nil, err
		}
		return &recorder{Engine: e, mu: &mu, log: &log}, nil
	}
	shell := memshell.New("wasm", factory)
	defer shell.Close(context.Background())
	t.Run("corpus", func(t *testing.T) { conformance.Run(t, shell) })
	t.Run("beyond", func(t *testing.T) { beyondTheCorpus(t, factory) })
	require.NotEmpty(t, log, "no decision was recorded")

	s := newSchemas(t)
	e, err := factory(context.Background(), []byte(`{"catalog":{"connectors":{}}}`))
	require.NoError(t, err)
	manifest := e.Manifest()
	require.NoError(t, e.Close(context.Background()))
	prefetch := map[string]map[string]string{}
	for op, o := range manifest.Ops {
		var tmpl []struct{ Key, Kind string }
		require.NoError(t, json.Unmarshal(o.Prefetch, &tmpl))
		prefetch[op] = map[string]string{}
		for _, x := range tmpl {
			prefetch[op][x.Key] = x.Kind
		}
	}

	seen := map[string]map[string]bool{"needs": {}, "facts": {}, "effects": {}}
	var walk func([]json.RawMessage)
	walk = func(effects []json.RawMessage) {
		for _, raw := range effects {
			var e struct {
				Kind string
				Undo []json.RawMessage
			}
			require.NoError(t, json.Unmarshal(raw, &e))
			seen["effects"][e.Kind] = true
			walk(e.Undo)
		}
	}
	var kinds map[string]string // fact key → need kind, for the operation under way
	for _, x := range log {
		var q struct {
			Op      string
			Facts   map[string]json.RawMessage
			Attempt int
			Round   int
		}
		require.NoError(t, json.Unmarshal(x.query, &q))
		if q.Round == 0 && q.Attempt == 0 { // a new operation
			kinds = map[string]string{}
			for k, v := range prefetch[q.Op] {
				kinds[k] = v
			}
		}
		if err := s.validate("query.schema.json", x.query); err != nil {
			t.Errorf("query %s\n%v", x.query, err)
		}
		if err := s.validate("decision.schema.json", x.decision); err != nil {
			t.Errorf("decision %s\n%v", x.decision, err)
		}
		for key, raw := range q.Facts {
			if key == hostabi.FactArgs || strings.HasPrefix(key, hostabi.FactApply) {
				continue // the query schema covers the driver's own facts
			}
			kind, ok := kinds[key]
			if !ok {
				t.Errorf("%s: fact %q was never asked for", q.Op, key)
				continue
			}
			seen["facts"][kind] = true
			if err := s.validate("facts.schema.json#/$defs/"+kind, raw); err != nil {
				t.Errorf("%s: fact %s (%s) = %s\n%v", q.Op, key, kind, raw, err)
			}
		}
		var d struct {
			Needs   []struct{ Key, Kind string }
			Effects []json.RawMessage
		}
		require.NoError(t, json.Unmarshal(x.decision, &d))
		for _, n := range d.Needs {
			kinds[n.Key] = n.Kind
			seen["needs"][n.Kind] = true
		}
		walk(d.Effects)
	}
	for file, seen := range seen {
		for _, k := range schemaKinds(t, file+".schema.json") {
			_, skip := unexercised[k]
			switch {
			case !seen[k] && !skip:
				t.Errorf("%s.schema.json: kind %s never occurs", file, k)
			case seen[k] && skip:
				t.Errorf("%s.schema.json: kind %s occurs now; remove it from unexercised (%s)", file, k, unexercised[k])
			}
		}
	}
	t.Logf("validated %d queries and decisions (and their facts, needs and effects) against hostabi/schema", len(log))
}

// beyondTheCorpus runs, on memhost through package host and the driver, the operations
// that use kinds no corpus scenario uses: disconnect where the catalog names a revocation
// endpoint (http.send), and agent_id on a source that exists and on one that does not
// (file.digest).
func beyondTheCorpus(t *testing.T, factory memshell.EngineFactory) {
	ctx := context.Background()
	raw, err := conformance.MergePatch(conformance.BaseCatalog,
		json.RawMessage(`{"connectors":{"google":{"revocation_url":"https://oauth2.googleapis.com/revoke"}}}`))
	require.NoError(t, err)
	cat, err := catalog.Load(raw)
	require.NoError(t, err)
	engine, err := factory(ctx, cat.Data())
	require.NoError(t, err)
	defer engine.Close(ctx)

	w := memhost.New(time.UnixMilli(conformance.DefaultClock), 1)
	memshell.Serve(w, cat)
	service := hostabi.DefaultService
	w.SetKeyring(service, layout.ClientUser("google"), layout.Client{ClientID: "client-1", ClientSecret: "google-secret-1"}.Encode())
	w.SetKeyring(service, layout.ConnectionUser("google"), layout.Connection{
		AccountEmail: "user@example.com", ClientIDHash: layout.ClientIDHash("client-1"),
		ConnectedAt: layout.Seconds(conformance.DefaultClock - 86_400_000), RefreshToken: "rt-google-1",
		Scopes: []string{"gmail.readonly"},
	}.Encode())
	w.Server.IssueToken("google", "rt-google-1", nil)
	w.SetSource("~/agents/helper.py", []byte("print('hello')\n"))
	d := &hostabi.Driver{Engine: engine, Host: host.New(w.Capabilities(""))}

	out, err := d.Run(ctx, "disconnect", map[string]any{"connector": "google"}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%+v", out.Error)
	require.Equal(t, 1, w.Server.Stats().RevokedTokens, "disconnect revokes the refresh token at the provider")
	require.False(t, w.Server.Live("rt-google-1"), "disconnect revokes the refresh token at the provider")
	_, err = w.Capabilities("").Keyring.Get(ctx, service, layout.ConnectionUser("google"))
	require.ErrorIs(t, err, hostabi.ErrNotFound)

	out, err = d.Run(ctx, "agent_id", map[string]any{"source": "~/agents/helper.py", "name": "helper"}, nil)
	require.NoError(t, err)
	require.Nil(t, out.Error, "%+v", out.Error)
	require.Regexp(t, `^\{"id":"custom:[0-9a-f]{16}:helper"`, string(out.Result))

	out, err = d.Run(ctx, "agent_id", map[string]any{"source": "~/agents/missing.py"}, nil)
	require.NoError(t, err)
	require.NotNil(t, out.Error)
	require.Equal(t, "USAGE", out.Error.Code)
	require.Contains(t, out.Error.Message, "no such file")
}

// schemaKinds returns the kinds a schema file defines: its $defs but the shared ones.
func schemaKinds(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("schema", file))
	require.NoError(t, err)
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var out []string
	for k := range doc.Defs {
		if k != "base" && k != "need" && k != "effect" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// readmeKinds returns the kinds of the first column of the table that follows heading in
// README.md, in order.
func readmeKinds(t *testing.T, heading string) []string {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	require.True(t, ok, "README.md has no %q", heading)
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z.]+)` \\|")
	var out []string
	for _, m := range row.FindAllStringSubmatch(rest, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestKindsMatchSchema keeps the kinds in step: hostabi.NeedKinds and EffectKinds (each
// constant with its doc comment) ⇔ the $defs of needs, facts and effects.schema.json ⇔ the
// tables of README.md, in the README's order.
func TestKindsMatchSchema(t *testing.T) {
	sorted := func(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }
	require.Equal(t, sorted(hostabi.NeedKinds), schemaKinds(t, "needs.schema.json"), "NeedKinds ⇔ needs.schema.json")
	require.Equal(t, sorted(hostabi.NeedKinds), schemaKinds(t, "facts.schema.json"), "NeedKinds ⇔ facts.schema.json")
	require.Equal(t, sorted(hostabi.EffectKinds), schemaKinds(t, "effects.schema.json"), "EffectKinds ⇔ effects.schema.json")
	require.Equal(t, hostabi.NeedKinds, readmeKinds(t, "## Facts: answering each need"), "NeedKinds ⇔ the README's table of needs")
	require.Equal(t, hostabi.EffectKinds, readmeKinds(t, "## Effects: applying a decision"), "EffectKinds ⇔ the README's table of effects")

	// Every kind is a constant with a doc comment.
	f, err := parser.ParseFile(token.NewFileSet(), "kinds.go", nil, parser.ParseComments)
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				documented[s] = v.Doc != nil && strings.TrimSpace(v.Doc.Text()) != ""
			}
		}
	}
	for _, k := range append(slices.Clone(hostabi.NeedKinds), hostabi.EffectKinds...) {
		require.True(t, documented[k], "kinds.go: the constant of %s has no doc comment", k)
	}
}

// TestSchemasRejectMalformed shows the schemas are not vacuous: each document breaks one
// rule of the contract.
func TestSchemasRejectMalformed(t *testing.T) {
	s := newSchemas(t)
	desc := `{"$ref":"k#value","digest":"sha256:0123456789abcdef","crc32":"01234567"}`
	for _, c := range []struct{ schema, doc string }{
		{"decision.schema.json", `{"status":"need","needs":[]}`},
		{"decision.schema.json", `{"status":"need","needs":[{"key":"x","kind":"file.read","path":"/etc/passwd"}]}`},
		{"decision.schema.json", `{"status":"need","needs":[{"key":"l","kind":"lock.acquire"}]}`},
		{"decision.schema.json", `{"status":"need","needs":[{"key":"l","kind":"lock.acquire","name":"google","owner":"me"}]}`},
		{"decision.schema.json", `{"status":"need","needs":[{"key":"t","kind":"http.request","method":"POST","url":"https://x","form":{},"json":{}}]}`},
		{"decision.schema.json", `{"status":"need","needs":[{"key":"e","kind":"entropy","bytes":1000}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"error":{"code":"BUSY","message":"m","fix":""},"effects":[]}`},
		{"decision.schema.json", `{"status":"done","error":{"code":"NOPE","message":"m","fix":""},"effects":[]}`},
		{"decision.schema.json", `{"status":"done","result":{}}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"connection.put","provider":"google"}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"keyring.set","user":"u","value":"v","expect":{"found":true}}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"keyring.set","user":"u","value":{"$concat":[1]}}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"ledger.write","ledger":"/etc/passwd","ops":[{"path":[],"value":1}]}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"ledger.write","ledger":"a.json","ops":[{"path":["a"],"value":1,"delete":true}]}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"event.emit","type":"x","payload":{}}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"keyring.delete","user":"u","undo":[{"kind":"nope"}]}]}`},
		{"query.schema.json", `{"op":"status","args":{"n":1.5},"facts":{}}`},
		{"query.schema.json", `{"op":"status","args":{},"facts":{"apply@0":{"host_error":{"code":"OOPS","detail":"d"}}}}`},
		{"query.schema.json", `{"op":"status","args":{},"facts":{"arg":{"client_secret":"plain text"}}}`},
		{"facts.schema.json#/$defs/keyring.get", `{"found":true,"value":` + desc + `}`},
		{"facts.schema.json#/$defs/keyring.get", `{"found":true,"version":"v","value":"the secret"}`},
		{"facts.schema.json#/$defs/entropy", `{"$ref":"k#value","digest":"sha256:0123","crc32":"01234567"}`},
		{"facts.schema.json#/$defs/ledger.read", `{"ledger":"a.json","path":[],"file":"/a.json","found":true,"version":"v","exists":true,"shape":["object"]}`},
		{"facts.schema.json#/$defs/ledger.read", `{"ledger":"a.json","path":[],"file":"/a.json","found":true,"version":"v","exists":false,"value":1,"shape":["object"]}`},
		{"facts.schema.json#/$defs/http.request", `{"status":0,"error":"oops"}`},
		{"facts.schema.json#/$defs/http.request", `{"status":200,"headers":{"set-cookie":"a"},"json":null}`},
		{"facts.schema.json#/$defs/lock.acquire", `"mine"`},
		{"facts.schema.json#/$defs/loopback.wait", `{"status":"callback","params":{"code":"plain-code"}}`},
		{"facts.schema.json#/$defs/clock.now", `1790000000000.5`},
	} {
		if s.validate(c.schema, []byte(c.doc)) == nil {
			t.Errorf("%s accepts %s", c.schema, c.doc)
		}
	}
	// ... and accept their well-formed neighbours.
	for _, c := range []struct{ schema, doc string }{
		{"decision.schema.json", `{"status":"need","needs":[{"key":"l","kind":"lock.acquire","name":"google","wait_ms":5000}]}`},
		{"decision.schema.json", `{"status":"done","result":{},"effects":[{"kind":"keyring.set","user":"u","value":{"a":{"$number":"1.5"},"b":{"$ref":"k#v"}},"expect":{"found":false}}]}`},
		{"facts.schema.json#/$defs/keyring.get", `{"found":true,"version":"v","value":` + desc + `,"json":null}`},
		{"facts.schema.json#/$defs/keyring.get", `{"host_error":{"code":"INSECURE_STORE","detail":"d","fix":"f"}}`},
		{"facts.schema.json#/$defs/http.request", `{"status":0,"error":"refused"}`},
		{"facts.schema.json#/$defs/http.request", `{"status":502,"headers":{},"json":null,"body":"not_json"}`},
	} {
		if err := s.validate(c.schema, []byte(c.doc)); err != nil {
			t.Errorf("%s refuses %s: %v", c.schema, c.doc, err)
		}
	}
}
