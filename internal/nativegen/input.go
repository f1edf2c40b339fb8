package nativegen

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/opa/v1/ir"
)

// ReadPlan reads plan.json, directly or from a bundle built with -t plan.
func ReadPlan(p string) (*ir.Policy, string, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, "", err
	}
	if strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") {
		if raw, err = planFromBundle(raw); err != nil {
			return nil, "", fmt.Errorf("%s: %w", p, err)
		}
	}
	pol, err := ParsePlan(raw)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", p, err)
	}
	sum := sha256.Sum256(raw)
	return pol, hex.EncodeToString(sum[:]), nil
}

// ParsePlan decodes a plan; a statement type OPA's ir package does not know is an error.
func ParsePlan(raw []byte) (*ir.Policy, error) {
	var pol ir.Policy
	if err := json.Unmarshal(raw, &pol); err != nil {
		return nil, fmt.Errorf("not a plan OPA's ir package reads: %w", err)
	}
	if pol.Plans == nil || len(pol.Plans.Plans) == 0 {
		return nil, errors.New("the plan has no entrypoints")
	}
	normalize(&pol)
	return &pol, nil
}

func planFromBundle(raw []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, errors.New("no plan.json in the bundle (build it with opa build -t plan)")
		}
		if err != nil {
			return nil, err
		}
		if path.Clean("/"+h.Name) == "/plan.json" {
			return io.ReadAll(tr)
		}
	}
}

// Builtin is a built-in function the runtime implements.
type Builtin struct {
	Name   string // Rego name, e.g. "strings.replace_n"
	GoName string // the runtime's function
	Method bool   // a method of *rt.Eval (it allocates) rather than a function
	Arity  int
	// Strings marks the parameters the runtime takes as a Go string: the generated call
	// checks the operand is a string (undefined otherwise) and passes its text, so the
	// type check is written once, here, not at the top of each built-in.
	Strings []bool
}

// ScanBuiltins lists the runtime's built-in functions: the functions (or methods of
// *Eval) whose doc comment has a line `//rego:builtin NAME`, returning *V from Arity
// parameters, each a *V or a string (Builtin.Strings).
func ScanBuiltins(dir string) (map[string]Builtin, error) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]Builtin{}
	for _, ent := range ents {
		name := ent.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Doc == nil {
				continue
			}
			for _, c := range fd.Doc.List {
				rest, ok := strings.CutPrefix(c.Text, "//rego:builtin ")
				if !ok {
					continue
				}
				bname := strings.TrimSpace(rest)
				b := Builtin{Name: bname, GoName: fd.Name.Name, Method: fd.Recv != nil}
				for _, p := range fd.Type.Params.List {
					str := isString(p.Type)
					if !str && !isVPtr(p.Type) {
						return nil, fmt.Errorf("%s: builtin %s (%s): parameters must be *V or string", fset.Position(fd.Pos()), bname, fd.Name.Name)
					}
					for range max(len(p.Names), 1) {
						b.Strings = append(b.Strings, str)
					}
				}
				b.Arity = len(b.Strings)
				if r := fd.Type.Results; r == nil || len(r.List) != 1 || !isVPtr(r.List[0].Type) || len(r.List[0].Names) > 1 {
					return nil, fmt.Errorf("%s: builtin %s (%s) must return one *V", fset.Position(fd.Pos()), bname, fd.Name.Name)
				}
				if prev, dup := out[bname]; dup {
					return nil, fmt.Errorf("builtin %s implemented twice (%s and %s)", bname, prev.GoName, fd.Name.Name)
				}
				out[bname] = b
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no //rego:builtin functions", dir)
	}
	return out, nil
}

func isVPtr(e ast.Expr) bool {
	st, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := st.X.(*ast.Ident)
	return ok && id.Name == "V"
}

func isString(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "string"
}

// normalize replaces the pointer operands OPA's JSON decoding makes (*ir.Local,
// *ir.StringIndex, *ir.Bool) by values, as the planner makes them.
func normalize(pol *ir.Policy) {
	fix := func(o *ir.Operand) {
		switch v := o.Value.(type) {
		case *ir.Local:
			o.Value = *v
		case *ir.StringIndex:
			o.Value = *v
		case *ir.Bool:
			o.Value = *v
		}
	}
	f := func(s ir.Stmt) {
		switch s := s.(type) {
		case *ir.ArrayAppendStmt:
			fix(&s.Value)
		case *ir.AssignVarOnceStmt:
			fix(&s.Source)
		case *ir.AssignVarStmt:
			fix(&s.Source)
		case *ir.CallDynamicStmt:
			for i := range s.Path {
				fix(&s.Path[i])
			}
		case *ir.CallStmt:
			for i := range s.Args {
				fix(&s.Args[i])
			}
		case *ir.DotStmt:
			fix(&s.Source)
			fix(&s.Key)
		case *ir.EqualStmt:
			fix(&s.A)
			fix(&s.B)
		case *ir.NotEqualStmt:
			fix(&s.A)
			fix(&s.B)
		case *ir.IsArrayStmt:
			fix(&s.Source)
		case *ir.IsObjectStmt:
			fix(&s.Source)
		case *ir.IsSetStmt:
			fix(&s.Source)
		case *ir.LenStmt:
			fix(&s.Source)
		case *ir.ObjectInsertStmt:
			fix(&s.Key)
			fix(&s.Value)
		case *ir.ObjectInsertOnceStmt:
			fix(&s.Key)
			fix(&s.Value)
		case *ir.SetAddStmt:
			fix(&s.Value)
		case *ir.WithStmt:
			fix(&s.Value)
		}
	}
	for _, p := range pol.Plans.Plans {
		walkBlocks(p.Blocks, f)
	}
	if pol.Funcs != nil {
		for _, fn := range pol.Funcs.Funcs {
			walkBlocks(fn.Blocks, f)
		}
	}
}
