package nodiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// Divergence is a query on which two engines disagreed.
type Divergence struct {
	Query        []byte
	Names        [2]string
	Outs         [2][]byte
	Errs         [2]error
	Family, Note string
}

func (d *Divergence) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "engines disagree")
	if d.Family != "" {
		fmt.Fprintf(&b, " (%s)", d.Family)
	}
	fmt.Fprintf(&b, "\n query: %s", d.Query)
	for i := range 2 {
		fmt.Fprintf(&b, "\n %s: %s (err %v)", d.Names[i], d.Outs[i], d.Errs[i])
	}
	if d.Note != "" {
		fmt.Fprintf(&b, "\n %s", d.Note)
	}
	return b.String()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Diff asks every engine and returns the first engine's answer, with a *Divergence for
// the first engine whose decision differs from the first's by one byte or whose error
// differs in text.
func Diff(ctx context.Context, q []byte, engines ...core.Engine) ([]byte, error, *Divergence) {
	out, err := engines[0].DecideJSON(ctx, nil, q)
	for _, e := range engines[1:] {
		o, er := e.DecideJSON(ctx, nil, q)
		if !bytes.Equal(out, o) || errText(err) != errText(er) {
			return out, err, &Divergence{
				Query: bytes.Clone(q), Names: [2]string{engines[0].Name(), e.Name()},
				Outs: [2][]byte{out, o}, Errs: [2]error{err, er},
			}
		}
	}
	return out, err, nil
}

// DiffWith asks engine e and compares its answer with another engine's (out, err, named
// name), without asking that engine again.
func DiffWith(ctx context.Context, q []byte, e core.Engine, name string, out []byte, err error) *Divergence {
	got, gotErr := e.DecideJSON(ctx, nil, q)
	if !bytes.Equal(got, out) || errText(gotErr) != errText(err) {
		return &Divergence{
			Query: bytes.Clone(q), Names: [2]string{e.Name(), name},
			Outs: [2][]byte{got, out}, Errs: [2]error{gotErr, err},
		}
	}
	return nil
}

// Outcome names what a decision was, for coverage statistics: "need:KIND,..." or
// "done:result" or "done:CODE", with the effect kinds.
func Outcome(out []byte, err error) string {
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, " at byte"); i > 0 {
			msg = msg[:i]
		}
		return "error: " + msg
	}
	d, perr := core.ParseDecision(out)
	if perr != nil {
		return "unparseable: " + perr.Error()
	}
	if d.Status == core.StatusNeed {
		kinds := map[string]bool{}
		for _, n := range d.Needs {
			kinds[n.Kind] = true
		}
		return "need " + strings.Join(slices.Sorted(maps.Keys(kinds)), ",")
	}
	s := "done result"
	if d.Error != nil {
		s = "done " + d.Error.Code
	}
	if len(d.Effects) > 0 {
		kinds := map[string]bool{}
		for _, e := range d.Effects {
			kinds[e.Kind] = true
		}
		s += " +" + strings.Join(slices.Sorted(maps.Keys(kinds)), ",")
	}
	return s
}

// Tally counts outcomes.
type Tally map[string]int

// String lists the outcomes, most frequent first.
func (t Tally) String() string {
	keys := slices.Sorted(maps.Keys(t))
	sort.SliceStable(keys, func(i, j int) bool { return t[keys[i]] > t[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %6d  %s\n", t[k], k)
	}
	return b.String()
}

// Minimise shrinks a query on which engines disagree: it drops object members and array
// elements, empties strings and zeroes numbers, one at a time, keeping each change after
// which the engines still disagree the same way (the same engines failing with an error),
// and returns the smallest query found with its divergence. It is for reports: a
// divergence found among hundreds of facts is usually caused by one or two.
func Minimise(ctx context.Context, q []byte, engines ...core.Engine) ([]byte, *Divergence) {
	_, _, div := Diff(ctx, q, engines...)
	if div == nil {
		return q, nil
	}
	root, err := jsonx.Decode(q)
	if err != nil {
		return q, div
	}
	m := &minimiser{ctx: ctx, engines: engines, root: root, want: errClass(div), div: div, budget: 4000}
	m.node(root, func(v any) { m.root = v })
	b, _ := json.Marshal(m.root)
	return b, m.div
}

func errClass(d *Divergence) [2]bool { return [2]bool{d.Errs[0] != nil, d.Errs[1] != nil} }

type minimiser struct {
	ctx     context.Context
	engines []core.Engine
	root    any
	want    [2]bool
	div     *Divergence
	budget  int
}

// still reports whether the current tree still diverges the same way.
func (m *minimiser) still() bool {
	if m.budget--; m.budget < 0 {
		return false
	}
	b, err := json.Marshal(m.root)
	if err != nil || core.CheckQuery(b) != nil {
		return false
	}
	_, _, d := Diff(m.ctx, b, m.engines...)
	if d == nil || errClass(d) != m.want {
		return false
	}
	m.div = d
	return true
}

// node shrinks v in place; put replaces v in its parent.
func (m *minimiser) node(v any, put func(any)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			x := t[k]
			delete(t, k)
			if !m.still() {
				t[k] = x
			}
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			m.node(t[k], func(n any) { t[k] = n })
		}
	case []any:
		for i := len(t) - 1; i >= 0; i-- {
			cand := append(append([]any{}, t[:i]...), t[i+1:]...)
			put(cand)
			if m.still() {
				t = cand
			} else {
				put(t)
			}
		}
		for i := range t {
			m.node(t[i], func(n any) { t[i] = n })
		}
	case string:
		for _, cand := range []string{"", string([]rune(t)[:len([]rune(t))/2])} {
			if cand == t {
				continue
			}
			put(cand)
			if m.still() {
				return
			}
			put(t)
		}
	case json.Number:
		if t != "0" {
			put(json.Number("0"))
			if !m.still() {
				put(t)
			}
		}
	}
}

// Memo is an engine's answer to a query, remembered.
type Memo struct {
	Out []byte
	Err error
}

// Canonical is a query's JSON value written canonically (sorted keys, no whitespace), to
// tell queries that differ only in how they are written.
func Canonical(q []byte) string {
	v, err := jsonx.Decode(q)
	if err != nil {
		return string(q)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(q)
	}
	return string(b)
}
