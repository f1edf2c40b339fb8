package hostabi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/memshell"
)

const schemaBase = "https://github.com/grantwire/grantwire/hostabi/schema/"

// recorder wraps an engine and keeps every query and decision it sees.
type recorder struct {
	core.Engine
	mu    sync.Mutex
	pairs [][2][]byte
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
	r.pairs = append(r.pairs, [2][]byte{in, out})
	r.mu.Unlock()
	return core.ParseDecision(out)
}

func compileSchemas(t *testing.T) *jsonschema.Compiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, err := filepath.Glob("schema/*.schema.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func mustCompile(t *testing.T, c *jsonschema.Compiler, ref string) *jsonschema.Schema {
	t.Helper()
	s, err := c.Compile(schemaBase + ref)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	return s
}

// TestSchemasAgainstTheCorpus runs the whole conformance corpus and validates every query
// and decision the core saw against hostabi/schema, and every fact against the schema of
// the kind of need that asked for it. Every need, fact and effect kind must occur.
func TestSchemasAgainstTheCorpus(t *testing.T) {
	c := compileSchemas(t)
	query := mustCompile(t, c, "query.schema.json")
	decision := mustCompile(t, c, "decision.schema.json")
	factSchemas := map[string]*jsonschema.Schema{}

	var engines []*recorder
	shell := memshell.New("wasm", func(ctx context.Context, data []byte) (core.Engine, error) {
		e, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
		if err != nil {
			return nil, err
		}
		r := &recorder{Engine: e}
		engines = append(engines, r)
		return r, nil
	})
	t.Run("corpus", func(t *testing.T) { conformance.Run(t, shell) })
	defer shell.Close(context.Background())

	seenNeeds, seenEffects, seenFacts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	n := 0
	for _, r := range engines {
		// The kind of every fact key, per operation and arguments (a key's kind may depend on
		// the arguments: disconnect's "stored" is mcp.get or connection.get by connector type).
		kinds := map[string]map[string]string{}
		note := func(ctx, key, kind string) {
			if kinds[ctx] == nil {
				kinds[ctx] = map[string]string{}
			}
			if prev, ok := kinds[ctx][key]; ok && prev != kind {
				t.Errorf("%s: fact key %q is asked as %s and as %s", ctx, key, prev, kind)
			}
			kinds[ctx][key] = kind
		}
		prefetch := map[string][]struct{ Key, Kind string }{}
		for op, o := range r.Manifest().Ops {
			var tmpl []struct{ Key, Kind string }
			_ = json.Unmarshal(o.Prefetch, &tmpl)
			prefetch[op] = tmpl
		}
		context := func(raw []byte) (string, string) {
			var q struct {
				Op   string
				Args json.RawMessage
			}
			_ = json.Unmarshal(raw, &q)
			return q.Op + " " + string(q.Args), q.Op
		}
		for _, p := range r.pairs {
			var d struct {
				Status  string
				Needs   []struct{ Key, Kind string }
				Effects []struct{ Kind string }
			}
			ctx, op := context(p[0])
			for _, x := range prefetch[op] {
				note(ctx, x.Key, x.Kind)
			}
			_ = json.Unmarshal(p[1], &d)
			for _, x := range d.Needs {
				note(ctx, x.Key, x.Kind)
				seenNeeds[x.Kind] = true
			}
			for _, x := range d.Effects {
				seenEffects[x.Kind] = true
			}
		}
		for _, p := range r.pairs {
			n++
			for i, s := range []*jsonschema.Schema{query, decision} {
				v, err := jsonschema.UnmarshalJSON(bytes.NewReader(p[i]))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(v); err != nil {
					t.Errorf("%s\n%s", p[i], err)
				}
			}
			var q struct {
				Op    string
				Facts map[string]json.RawMessage
			}
			_ = json.Unmarshal(p[0], &q)
			ctx, _ := context(p[0])
			for key, raw := range q.Facts {
				kind, ok := kinds[ctx][key]
				if !ok {
					t.Errorf("%s: fact %q was never asked for", q.Op, key)
					continue
				}
				seenFacts[kind] = true
				s := factSchemas[kind]
				if s == nil {
					s = mustCompile(t, c, "facts.schema.json#/$defs/"+kind)
					factSchemas[kind] = s
				}
				v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
				if err := s.Validate(v); err != nil {
					t.Errorf("%s fact %s (%s) = %s\n%s", q.Op, key, kind, raw, err)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no decision was recorded")
	}
	all := func(file string) []string {
		raw, err := os.ReadFile(filepath.Join("schema", file))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Defs map[string]any `json:"$defs"`
		}
		_ = json.Unmarshal(raw, &doc)
		var out []string
		for k := range doc.Defs {
			if k != "need" && k != "effect" {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	for file, seen := range map[string]map[string]bool{"needs.schema.json": seenNeeds, "effects.schema.json": seenEffects, "facts.schema.json": seenFacts} {
		for _, k := range all(file) {
			if !seen[k] {
				t.Errorf("%s: kind %s never occurs in the corpus", file, k)
			}
		}
	}
	t.Logf("validated %d queries and decisions against hostabi/schema", n)
}

// TestSchemasRejectMalformedDecisions shows the schemas are not vacuous.
func TestSchemasRejectMalformedDecisions(t *testing.T) {
	c := compileSchemas(t)
	decision := mustCompile(t, c, "decision.schema.json")
	for _, bad := range []string{
		`{"status":"need","needs":[]}`,
		`{"status":"need","needs":[{"key":"x","kind":"file.read","path":"/etc/passwd"}]}`,
		`{"status":"need","needs":[{"key":"l","kind":"lock.acquire","name":"google"}]}`,
		`{"status":"done","result":{},"error":{"code":"BUSY","message":"","fix":""},"effects":[]}`,
		`{"status":"done","error":{"code":"NOPE","message":"m","fix":""},"effects":[]}`,
		`{"status":"done","result":{},"effects":[{"kind":"connection.set_refresh","provider":"google","refresh":{"$ref":"refresh#refresh_token"}}]}`,
		`{"status":"done","result":{},"effects":[{"kind":"connection.put","provider":"google","account":"a","scopes":[],"connected_at":1,"client_id_hash":"00000000","tenant":null,"refresh":"rt-plaintext"}]}`,
	} {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(bad)))
		if err != nil {
			t.Fatal(err)
		}
		if decision.Validate(v) == nil {
			t.Errorf("the decision schema accepts %s", bad)
		}
	}
}
