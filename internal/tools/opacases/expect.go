package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/grantwire/grantwire/internal/caseproto"
)

// expectation is what a case must give on the native engine.
type expectation struct {
	results  ast.Set // the result set (when no error is wanted)
	defined  *bool   // want_defined, when the case has no want_result
	errCode  string  // an error with this code…
	errText  string  // …whose message holds this text
	wantsErr bool
	oracle   bool // derived from OPA's evaluator with strict built-in errors off
}

// expect reads a case's expectation as OPA's topdown harness does. The native engine's
// built-in functions are not strict (an error is undefined, as in OPA's evaluator by
// default): a case whose error exists only with strict built-in errors (strict_error)
// must give what OPA's evaluator gives with them off, which the harness asks it.
func expect(ctx context.Context, tc *testCase) (*expectation, error) {
	wantsErr := tc.WantError != nil || tc.WantErrorCode != nil
	switch {
	case wantsErr && tc.StrictError:
		return oracle(ctx, tc)
	case wantsErr:
		e := &expectation{wantsErr: true}
		if tc.WantErrorCode != nil {
			e.errCode = *tc.WantErrorCode
		}
		if tc.WantError != nil {
			e.errText = *tc.WantError
		}
		return e, nil
	case tc.WantResult != nil:
		s, err := wantSet(*tc.WantResult)
		if err != nil {
			return nil, fmt.Errorf("want_result: %w", err)
		}
		return &expectation{results: s}, nil
	case tc.WantDefined != nil:
		return &expectation{defined: tc.WantDefined}, nil
	}
	return nil, fmt.Errorf("the case expects nothing (no want_result, want_defined, want_error or want_error_code)")
}

// oracle evaluates a case with OPA's evaluator, strict built-in errors off.
func oracle(ctx context.Context, tc *testCase) (*expectation, error) {
	opts := append(regoOptions(tc), rego.StrictBuiltinErrors(false))
	if tc.Data != nil {
		opts = append(opts, rego.Store(inmem.NewFromObject(*tc.Data)))
	}
	switch {
	case tc.InputTerm != nil:
		t, err := ast.ParseTerm(*tc.InputTerm)
		if err != nil {
			return nil, err
		}
		opts = append(opts, rego.ParsedInput(t.Value))
	case tc.Input != nil:
		opts = append(opts, rego.Input(*tc.Input))
	}
	rs, err := rego.New(opts...).Eval(ctx)
	if err != nil {
		e := &expectation{wantsErr: true, oracle: true, errText: err.Error()}
		if te, ok := err.(*topdown.Error); ok {
			e.errCode, e.errText = te.Code, te.Message
		}
		return e, nil
	}
	var bindings []map[string]any
	for _, r := range rs {
		bindings = append(bindings, r.Bindings)
	}
	s, err := resultSet(tc, bindings)
	if err != nil {
		return nil, err
	}
	return &expectation{results: s, oracle: true}, nil
}

// check compares the runner's reply with the expectation; "" when they agree.
func (e *expectation) check(tc *testCase, r *caseproto.Reply) string {
	if r.Fatal != "" {
		return r.Fatal
	}
	source := "the case"
	if e.oracle {
		source = "OPA's evaluator with strict built-in errors off"
	}
	if e.wantsErr {
		switch {
		case r.Error == "":
			return fmt.Sprintf("%s wants an error (%s %q), the native engine gave %s", source, e.errCode, e.errText, r.Result)
		case e.errCode != "" && r.Code != e.errCode:
			return fmt.Sprintf("%s wants error code %s, the native engine failed with %q (code %q)", source, e.errCode, r.Error, r.Code)
		case e.errText != "" && !strings.Contains(r.Error, e.errText):
			return fmt.Sprintf("%s wants an error saying %q, the native engine failed with %q", source, e.errText, r.Error)
		}
		return ""
	}
	if r.Error != "" {
		return fmt.Sprintf("unexpected error: %s", r.Error)
	}
	bindings, err := parseResult(r.Result)
	if err != nil {
		return err.Error()
	}
	if e.defined != nil {
		if got := len(bindings) > 0; got != *e.defined {
			return fmt.Sprintf("want defined=%v, got %s", *e.defined, r.Result)
		}
		return ""
	}
	got, err := resultSet(tc, bindings)
	if err != nil {
		return err.Error()
	}
	if e.results.Compare(got) != 0 {
		return fmt.Sprintf("unexpected query result:\n  want (%s): %v\n  got: %v", source, e.results, got)
	}
	return ""
}
