package audit

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

func keys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

func codeList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "`" + x + "`"
	}
	return strings.Join(q, ", ")
}

func short(p string) string { return strings.TrimPrefix(p, "data.") }

// cell makes text fit one Markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func title(a *ast.Annotations) string {
	if a == nil {
		return ""
	}
	return a.Title
}

func description(a *ast.Annotations) string {
	if a == nil {
		return ""
	}
	return strings.TrimSpace(a.Description)
}

func (pm *policyModel) render() []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# grantwire policy reference\n\n")
	w("<!-- Generated from the METADATA and the rules of policy/grantwire by `make docs`\n")
	w("     (`grantwire policy docs`); `make test` fails when it is stale. Do not edit by hand. -->\n\n")
	if d := description(pm.pkgs[dataRoot.String()]); d != "" {
		w("%s\n\n", d)
	}
	w("Every operation is one query `{op, args, facts, attempt}` to the entrypoint `grantwire/decide`; ")
	w("its answer is a decision: `need` (facts to gather) or `done` (a result or an error, and effects to apply). ")
	w("Below, each operation's arguments, facts, effects, events, result members and error codes are ")
	w("derived from the rules its decision rule reaches, so they cannot drift from the policy.\n\n")

	// Entrypoints.
	w("## Entrypoints\n\n| entrypoint | title | description |\n| --- | --- | --- |\n")
	for _, p := range pm.sortedRules() {
		ri := pm.rules[p]
		if ri.ann != nil && ri.ann.Entrypoint {
			w("| `%s` | %s | %s |\n", strings.ReplaceAll(short(p), ".", "/"), cell(title(ri.ann)), cell(description(ri.ann)))
		}
	}
	w("\n")

	// Operations.
	ops := append([]opInfo(nil), pm.ops...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].name < ops[j].name })
	common := keys(pm.common)
	w("## Operations\n\n| operation | decision rule | error codes |\n| --- | --- | --- |\n")
	for _, op := range ops {
		f := pm.opFacts(op.rule)
		w("| [`%s`](#%s) | `%s` | %s |\n", op.name, anchor(op.name), short(op.rule), codeList(keys(f.codes)))
	}
	w("\nEvery operation can also get, from `decide` itself: %s (malformed query, too many restarts, ", codeList(common))
	w("facts that match no rule). Codes of the error table that no rule builds come from the shell: %s.\n\n",
		codeList(pm.hostCodes()))
	for _, op := range ops {
		pm.renderOp(w, op)
	}

	// Errors.
	w("## Errors\n\nThe error table (`grantwire.errors.table`, published by `grantwire/manifest`) with what builds each code.\n\n")
	w("| code | REST | exit | meaning | returned by |\n| --- | --- | --- | --- | --- |\n")
	byCode := map[string][]string{}
	for _, op := range ops {
		for c := range pm.opFacts(op.rule).codes {
			byCode[c] = append(byCode[c], op.name)
		}
	}
	codes := slices.Sorted(maps.Keys(pm.table))
	for _, c := range codes {
		meaning := pm.meaning(c)
		by := codeList(byCode[c])
		if pm.common[c] {
			if len(byCode[c]) > 0 {
				by = "every operation (`decide`); also " + by
			} else {
				by = "every operation (`decide`)"
			}
		} else if len(byCode[c]) == 0 {
			by = "the shell (host failure)"
			if meaning == "" {
				meaning = "reported by the shell, not built by the policy"
			}
		}
		w("| `%s` | %s | %s | %s | %s |\n", c, pm.table[c][0], pm.table[c][1], cell(meaning), by)
	}
	w("\n")

	// Settings.
	w("## Settings\n\nConstants of the policy (changing one changes decisions; see `grantwire policy replay`).\n\n")
	w("| setting | value | meaning |\n| --- | --- | --- |\n")
	for _, p := range pm.sortedRules() {
		ri := pm.rules[p]
		if ri.value == "" || strings.HasPrefix(ri.name, "_") || len(ri.value) > 80 {
			continue
		}
		w("| `%s` | `%s` | %s |\n", short(p), ri.value, cell(strings.TrimSuffix(title(ri.ann)+": "+description(ri.ann), ": ")))
	}
	w("\n")

	// Packages and public rules.
	w("## Packages and public rules\n\n")
	pkgs := slices.Sorted(maps.Keys(pm.pkgFiles))
	for _, pkg := range pkgs {
		a := pm.pkgs[pkg]
		w("### `%s`", short(pkg))
		if t := title(a); t != "" {
			w(" — %s", t)
		}
		w("\n\n`%s`\n\n", pm.pkgFiles[pkg])
		if d := description(a); d != "" {
			w("%s\n\n", d)
		} else {
			w("**No package METADATA.**\n\n")
		}
		rows := 0
		for _, p := range pm.sortedRules() {
			ri := pm.rules[p]
			if ri.pkg != pkg || strings.HasPrefix(ri.name, "_") {
				continue
			}
			if rows == 0 {
				w("| rule | title | description |\n| --- | --- | --- |\n")
			}
			rows++
			sig := ri.name
			if len(ri.args) > 0 {
				sig += "(" + strings.Join(ri.args, ", ") + ")"
			}
			t, d := cell(title(ri.ann)), cell(description(ri.ann))
			if ri.ann == nil {
				t = "**no METADATA**"
			} else if ri.ann.Entrypoint {
				t += " (entrypoint)"
			}
			w("| `%s` | %s | %s |\n", sig, t, d)
		}
		if rows == 0 {
			w("No public rules.\n")
		}
		w("\n")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func (pm *policyModel) renderOp(w func(string, ...any), op opInfo) {
	f := pm.opFacts(op.rule)
	ri := pm.rules[op.rule]
	w("### `%s`\n\n", op.name)
	w("Decision rule `%s` (`%s`)", short(op.rule), ri.file)
	if t := title(ri.ann); t != "" {
		w(": %s", t)
	}
	w(".\n\n")
	if d := description(ri.ann); d != "" {
		w("%s\n\n", d)
	}
	if d := description(pm.pkgs[ri.pkg]); d != "" && pm.pkgOps(ri.pkg) == 1 {
		w("%s\n\n", d)
	}
	w("- Arguments (`input.args`): %s\n", codeList(keys(f.args)))
	w("- Facts it may ask for: %s\n", codeList(keys(f.needs)))
	w("- Effects it may request: %s\n", codeList(keys(f.effects)))
	w("- Events it may emit: %s\n", codeList(keys(f.events)))
	res := codeList(keys(f.results))
	switch {
	case f.opaque && len(f.results) == 0:
		res = "computed (see the rule)"
	case f.opaque:
		res += ", or a computed result"
	}
	w("- Result members: %s\n\n", res)
	codes := keys(f.codes)
	if len(codes) == 0 {
		w("It returns no error of its own.\n\n")
		return
	}
	w("| error | REST | exit | when |\n| --- | --- | --- | --- |\n")
	for _, c := range codes {
		var when []string
		for _, p := range keys(f.producers[c]) {
			when = append(when, title(pm.rules[p].ann))
		}
		w("| `%s` | %s | %s | %s |\n", c, pm.table[c][0], pm.table[c][1], cell(strings.Join(when, "; ")))
	}
	w("\n")
}

// pkgOps counts the operations whose decision rule is in pkg.
func (pm *policyModel) pkgOps(pkg string) int {
	n := 0
	for _, op := range pm.ops {
		if pm.rules[op.rule] != nil && pm.rules[op.rule].pkg == pkg {
			n++
		}
	}
	return n
}

// meaning joins the titles and descriptions of the errors functions that build code.
func (pm *policyModel) meaning(code string) string {
	var parts []string
	for _, p := range pm.sortedRules() {
		ri := pm.rules[p]
		if ri.pkg == errorsPkg && ri.name != "error" && ri.codes[code] {
			parts = append(parts, strings.TrimSuffix(title(ri.ann)+": "+description(ri.ann), ": "))
		}
	}
	return strings.Join(parts, " / ")
}

// hostCodes are the codes of the error table that no rule builds.
func (pm *policyModel) hostCodes() []string {
	built := map[string]bool{}
	for _, ri := range pm.rules {
		for c := range ri.codes {
			built[c] = true
		}
	}
	var out []string
	for c := range pm.table {
		if !built[c] {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

func (pm *policyModel) sortedRules() []string {
	return slices.Sorted(maps.Keys(pm.rules))
}

func anchor(s string) string { return strings.ReplaceAll(strings.ToLower(s), " ", "-") }
