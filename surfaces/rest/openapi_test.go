package rest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/surfaces/rest"
)

type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

var (
	docOnce  sync.Once
	doc      openAPIDoc
	docAny   any
	compiler *jsonschema.Compiler
	schemas  sync.Map // "get /path 200" → *jsonschema.Schema
	hitMu    sync.Mutex
	hit      = map[string]bool{} // "GET /path" of every operation a test called
)

func loadDoc(t testing.TB) {
	docOnce.Do(func() {
		raw := rest.OpenAPI()
		if err := json.Unmarshal(raw, &doc); err != nil {
			panic(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			panic(err)
		}
		docAny = v
		compiler = jsonschema.NewCompiler()
		compiler.DefaultDraft(jsonschema.Draft2020)
		if err := compiler.AddResource("openapi.json", v); err != nil {
			panic(err)
		}
	})
}

// template finds the OpenAPI path template of a concrete path.
func template(path string) (string, bool) {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(path, "/")
	var best string
	bestVars := 99
	for tmpl := range doc.Paths {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		vars, ok := 0, true
		for i := range ts {
			if strings.HasPrefix(ts[i], "{") {
				vars++
				continue
			}
			if ts[i] != segs[i] {
				ok = false
				break
			}
		}
		if ok && vars < bestVars {
			best, bestVars = tmpl, vars
		}
	}
	return best, best != ""
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// checkAgainstOpenAPI fails when a response's status is not documented for its operation,
// or a JSON body does not match the documented schema. Responses of the request checks
// (403 UI header, 421 Host, 401 token) are documented on every operation too.
func checkAgainstOpenAPI(t testing.TB, method, path string, r response) {
	t.Helper()
	loadDoc(t)
	tmpl, ok := template(path)
	if !ok {
		require.Contains(t, []int{404, 405, 421, 403}, r.status, "%s %s is not in openapi.json", method, path)
		return
	}
	m := strings.ToLower(method)
	var op struct {
		Responses map[string]struct {
			Content map[string]json.RawMessage `json:"content"`
		} `json:"responses"`
	}
	raw, ok := doc.Paths[tmpl][m]
	if !ok {
		require.Contains(t, []int{405, 403, 421}, r.status, "%s %s: openapi.json has no %s for %s", method, path, method, tmpl)
		return
	}
	require.NoError(t, json.Unmarshal(raw, &op))
	hitMu.Lock()
	hit[method+" "+tmpl] = true
	hitMu.Unlock()
	status := strconv.Itoa(r.status)
	resp, ok := op.Responses[status]
	require.True(t, ok, "%s %s answered %d, which openapi.json does not list for %s %s: %s", method, path, r.status, method, tmpl, r.body)
	if _, isJSON := resp.Content["application/json"]; !isJSON || len(r.body) == 0 {
		return
	}
	loc := fmt.Sprintf("openapi.json#/paths/%s/%s/responses/%s/content/application~1json/schema", pointerEscape(tmpl), m, status)
	sch, ok := schemas.Load(loc)
	if !ok {
		compiled, err := compiler.Compile(loc)
		require.NoError(t, err, loc)
		schemas.Store(loc, compiled)
		sch = compiled
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	require.NoError(t, err, "%s %s: body is not JSON: %s", method, path, r.body)
	require.NoError(t, sch.(*jsonschema.Schema).Validate(v), "%s %s %d: the body does not match openapi.json: %s", method, path, r.status, r.body)
}

// The OpenAPI document lists exactly the server's routes, each once.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	loadDoc(t)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	var documented []string
	for p, ops := range doc.Paths {
		for m := range ops {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	routes := rest.Routes()
	sort.Strings(documented)
	sort.Strings(routes)
	require.Equal(t, routes, documented)
}

// checkEveryOperationCalled fails unless the tests so far called every documented
// operation (TestRESTEveryRoute calls it last).
func checkEveryOperationCalled(t *testing.T) {
	loadDoc(t)
	hitMu.Lock()
	defer hitMu.Unlock()
	var missed []string
	for p, ops := range doc.Paths {
		for m := range ops {
			if !hit[strings.ToUpper(m)+" "+p] {
				missed = append(missed, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(missed)
	require.Empty(t, missed, "operations of openapi.json no test called")
}
