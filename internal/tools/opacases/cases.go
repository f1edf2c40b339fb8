package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/test/cases"
	"github.com/open-policy-agent/opa/v1/test/cases/testdata"
	"github.com/open-policy-agent/opa/v1/types"
	"github.com/open-policy-agent/opa/v1/util"
)

// A testCase is one of OPA's test cases: its YAML, where it comes from, and what planning
// it gave.
type testCase struct {
	cases.TestCase
	ID     string // the note, with "#2", "#3"… for the second, third… case of the same note
	Family string // the directory of its file (aggregates, withkeyword…)
	File   string // its file under v1/test/cases/testdata/v1

	timeout time.Duration // the deadline of its evaluation, when not the run's
}

// loadCases reads every case of the OPA module pinned in go.mod (testdata.V1, embedded in
// OPA's module), as OPA's harnesses read them (util.Unmarshal of the YAML), in file order.
func loadCases() ([]*testCase, error) {
	var out []*testCase
	seen := map[string]int{}
	err := fs.WalkDir(testdata.V1, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := testdata.V1.ReadFile(p)
		if err != nil {
			return err
		}
		var set cases.Set
		if err := util.Unmarshal(raw, &set); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel := strings.TrimPrefix(p, "v1/")
		for _, tc := range set.Cases {
			seen[tc.Note]++
			id := tc.Note
			if n := seen[tc.Note]; n > 1 {
				id = fmt.Sprintf("%s#%d", tc.Note, n)
			}
			tc.Filename = rel
			out = append(out, &testCase{TestCase: tc, ID: id, Family: path.Dir(rel), File: rel})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no test cases in OPA's testdata.V1")
	}
	return out, nil
}

// The planner is OPA's, reached as build/generate-extended-cases reaches it: a rego
// target plugin that receives the plan of a prepared query instead of evaluating it.
const targetName = "grantwire-opacases"

type planSlot struct{ p *ir.Policy }

type slotKey struct{}

type planTarget struct{}

func (planTarget) IsTarget(s string) bool { return s == targetName }

func (planTarget) PrepareForEval(ctx context.Context, p *ir.Policy, _ ...rego.PrepareOption) (rego.TargetPluginEval, error) {
	slot, ok := ctx.Value(slotKey{}).(*planSlot)
	if !ok {
		return nil, errors.New("opacases: planning outside plan()")
	}
	slot.p = p
	return planTarget{}, nil
}

func (planTarget) Eval(context.Context, *rego.EvalContext, ast.Value) (ast.Value, error) {
	return nil, errors.New("opacases: the planning target does not evaluate")
}

func init() {
	rego.RegisterPlugin(targetName, planTarget{})
	// The test function one case calls (time/time caching), declared as OPA's generator
	// declares it so that the case plans; no engine implements it.
	ast.RegisterBuiltin(&ast.Builtin{Name: "test.sleep", Decl: types.NewFunction(types.Args(types.S), types.NewNull())})
}

// regoOptions are the options OPA's harnesses give every case: its query, its modules
// (module-N.rego), Rego v1, the experimental keywords when it asks for them.
func regoOptions(tc *testCase) []func(*rego.Rego) {
	opts := []func(*rego.Rego){
		rego.Query(tc.Query),
		rego.SetRegoVersion(ast.RegoV1),
	}
	if tc.ExperimentalKeywords {
		opts = append(opts, rego.Capabilities(ast.CapabilitiesForThisVersion(ast.CapabilitiesExperimentalKeywords(true))))
	}
	for i, m := range tc.Modules {
		opts = append(opts, rego.Module(fmt.Sprintf("module-%d.rego", i), m))
	}
	return opts
}

// plan plans a case's query with OPA and returns the plan as nativegen reads one (its
// JSON, as `opa build -t plan` writes it).
func plan(ctx context.Context, tc *testCase) ([]byte, error) {
	slot := &planSlot{}
	ctx = context.WithValue(ctx, slotKey{}, slot)
	opts := append(regoOptions(tc), rego.Target(targetName))
	if _, err := rego.New(opts...).PrepareForEval(ctx); err != nil {
		return nil, err
	}
	if slot.p == nil {
		return nil, errors.New("the planner produced no plan")
	}
	if n := len(slot.p.Plans.Plans); n != 1 {
		return nil, fmt.Errorf("the planner produced %d plans, not 1", n)
	}
	return json.Marshal(slot.p)
}

// families lists the families of cases in order.
func families(cs []*testCase) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.Family) {
			out = append(out, c.Family)
		}
	}
	slices.Sort(out)
	return out
}
