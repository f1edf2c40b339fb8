package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/grantwire/grantwire/internal/caseproto"
)

// inputJSON is a case's input for the runner: its input, or its input_term (Rego, parsed
// as OPA's harness parses it) with the sets and non-string keys JSON cannot write tagged
// (caserun.Untag). nil: the case has no input.
func inputJSON(tc *testCase) (raw []byte, tagged bool, err error) {
	switch {
	case tc.InputTerm != nil:
		t, err := ast.ParseTerm(*tc.InputTerm)
		if err != nil {
			return nil, false, fmt.Errorf("input_term: %w", err)
		}
		var b strings.Builder
		tagged, err := appendTagged(&b, t.Value)
		return []byte(b.String()), tagged, err
	case tc.Input != nil:
		b, err := json.Marshal(*tc.Input)
		return b, false, err
	}
	return nil, false, nil
}

func appendTagged(b *strings.Builder, v ast.Value) (bool, error) {
	tagged := false
	elems := func(ts []*ast.Term) error {
		b.WriteByte('[')
		for i, t := range ts {
			if i > 0 {
				b.WriteByte(',')
			}
			tg, err := appendTagged(b, t.Value)
			if err != nil {
				return err
			}
			tagged = tagged || tg
		}
		b.WriteByte(']')
		return nil
	}
	switch x := v.(type) {
	case ast.String:
		b.WriteString(jsonString(string(x)))
		return false, nil
	case ast.Null, ast.Boolean, ast.Number:
		b.WriteString(x.String())
		return false, nil
	case *ast.Array:
		var ts []*ast.Term
		x.Foreach(func(t *ast.Term) { ts = append(ts, t) })
		err := elems(ts)
		return tagged, err
	case ast.Set:
		b.WriteString(`{` + jsonString(caseproto.SetTag) + `:`)
		err := elems(x.Slice())
		b.WriteByte('}')
		return true, err
	case ast.Object:
		keys := x.Keys()
		plain := true
		for _, k := range keys {
			if _, ok := k.Value.(ast.String); !ok {
				plain = false
			}
		}
		if !plain {
			var pairs []*ast.Term
			for _, k := range keys {
				pairs = append(pairs, ast.ArrayTerm(k, x.Get(k)))
			}
			b.WriteString(`{` + jsonString(caseproto.ObjectTag) + `:`)
			err := elems(pairs)
			b.WriteByte('}')
			return true, err
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(string(k.Value.(ast.String))))
			b.WriteByte(':')
			tg, err := appendTagged(b, x.Get(k).Value)
			if err != nil {
				return false, err
			}
			tagged = tagged || tg
		}
		b.WriteByte('}')
		return tagged, nil
	}
	return false, fmt.Errorf("input_term holds %v, not a value", v)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// resultSet turns a result set as OPA's topdown harness does (testAssertResultSet): a set
// of binding objects, each binding's JSON, sorted when the case sorts bindings, generated
// variables dropped when it ignores them.
func resultSet(tc *testCase, bindings []map[string]any) (ast.Set, error) {
	return bindingSet(bindings, tc.IgnoreGeneratedVars, tc.SortBindings)
}

// wantSet is a case's want_result as OPA's topdown harness reads it.
func wantSet(want []map[string]any) (ast.Set, error) { return bindingSet(want, false, false) }

func bindingSet(bindings []map[string]any, ignoreGenerated, sortArrays bool) (ast.Set, error) {
	out := ast.NewSet()
	for _, b := range bindings {
		obj := ast.NewObject()
		for name, v := range b {
			if ignoreGenerated && strings.HasPrefix(name, "__localq") {
				continue
			}
			if arr, ok := v.([]any); ok && sortArrays {
				slices.SortFunc(arr, util.Compare)
			}
			val, err := ast.InterfaceToValue(v)
			if err != nil {
				return nil, err
			}
			obj.Insert(ast.StringTerm(name), ast.NewTerm(val))
		}
		out.Add(ast.NewTerm(obj))
	}
	return out, nil
}

// parseResult reads the runner's result set (canonical JSON: an array of objects).
func parseResult(raw []byte) ([]map[string]any, error) {
	var out []map[string]any
	if err := util.UnmarshalJSON(raw, &out); err != nil {
		return nil, fmt.Errorf("the result set %s: %w", raw, err)
	}
	return out, nil
}
