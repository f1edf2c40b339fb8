// Command capgen writes policy/capabilities.json: OPA's capabilities restricted to the
// builtins that OPA's Wasm compiler implements inside the module (so policy.wasm needs no
// host builtin, and so no clock, randomness, network or runtime builtin can be used).
// The list mirrors OPA's internal/compiler/wasm builtinsFunctions for the pinned OPA.
//
// Usage: go run ./internal/tools/capgen > policy/capabilities.json
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Equality and Assign are compiled as unification, not calls.
var native = []*ast.Builtin{
	ast.Equality,
	ast.Assign,
	ast.Abs,
	ast.All,
	ast.And,
	ast.Any,
	ast.ArrayConcat,
	ast.ArrayFlatten,
	ast.ArrayReverse,
	ast.ArraySlice,
	ast.Base64Decode,
	ast.Base64Encode,
	ast.Base64IsValid,
	ast.Base64UrlDecode,
	ast.Base64UrlEncode,
	ast.BitsAnd,
	ast.BitsNegate,
	ast.BitsOr,
	ast.BitsShiftLeft,
	ast.BitsShiftRight,
	ast.BitsXOr,
	ast.Ceil,
	ast.Concat,
	ast.Contains,
	ast.Count,
	ast.Divide,
	ast.EndsWith,
	ast.Equal,
	ast.Floor,
	ast.FormatInt,
	ast.GlobMatch,
	ast.GreaterThan,
	ast.GreaterThanEq,
	ast.IndexOf,
	ast.InternalTemplateString,
	ast.Intersection,
	ast.IsArray,
	ast.IsBoolean,
	ast.IsNull,
	ast.IsNumber,
	ast.IsObject,
	ast.IsSet,
	ast.IsString,
	ast.JSONFilter,
	ast.JSONIsValid,
	ast.JSONMarshal,
	ast.JSONRemove,
	ast.JSONUnmarshal,
	ast.LessThan,
	ast.LessThanEq,
	ast.Lower,
	ast.Max,
	ast.Member,
	ast.MemberWithKey,
	ast.Min,
	ast.Minus,
	ast.Multiply,
	ast.NetCIDRContains,
	ast.NetCIDRIntersects,
	ast.NetCIDROverlap,
	ast.NotEqual,
	ast.NumbersRange,
	ast.ObjectFilter,
	ast.ObjectGet,
	ast.ObjectKeys,
	ast.ObjectRemove,
	ast.ObjectUnion,
	ast.ObjectUnionN,
	ast.Or,
	ast.Plus,
	ast.Product,
	ast.ReachableBuiltin,
	ast.RegexFindAllStringSubmatch,
	ast.RegexIsValid,
	ast.RegexMatch,
	ast.RegexMatchDeprecated,
	ast.Rem,
	ast.Replace,
	ast.ReplaceN,
	ast.Round,
	ast.SetDiff,
	ast.Sort,
	ast.Split,
	ast.StartsWith,
	ast.StringReverse,
	ast.Substring,
	ast.Sum,
	ast.ToNumber,
	ast.Trim,
	ast.TrimLeft,
	ast.TrimPrefix,
	ast.TrimRight,
	ast.TrimSpace,
	ast.TrimSuffix,
	ast.TypeNameBuiltin,
	ast.Union,
	ast.Upper,
	ast.WalkBuiltin,
}

func main() {
	caps := ast.CapabilitiesForThisVersion()
	keep := map[string]bool{}
	for _, b := range native {
		keep[b.Name] = true
	}
	var out []*ast.Builtin
	for _, b := range caps.Builtins {
		if keep[b.Name] {
			out = append(out, b)
		}
	}
	caps.Builtins = out
	raw, err := json.MarshalIndent(caps, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(raw))
}
