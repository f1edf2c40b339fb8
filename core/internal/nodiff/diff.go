package nodiff

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/core"
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

// Diff asks both engines and returns the first engine's answer, with a *Divergence when
// the decisions differ by one byte or the errors differ in text.
func Diff(ctx context.Context, q []byte, a, b core.Engine) ([]byte, error, *Divergence) {
	outA, errA := a.DecideJSON(ctx, nil, q)
	outB, errB := b.DecideJSON(ctx, nil, q)
	if !bytes.Equal(outA, outB) || errText(errA) != errText(errB) {
		return outA, errA, &Divergence{
			Query: bytes.Clone(q), Names: [2]string{a.Name(), b.Name()},
			Outs: [2][]byte{outA, outB}, Errs: [2]error{errA, errB},
		}
	}
	return outA, errA, nil
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
		return "need " + strings.Join(sortedKeys(kinds), ",")
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
		s += " +" + strings.Join(sortedKeys(kinds), ",")
	}
	return s
}

// Tally counts outcomes.
type Tally map[string]int

// String lists the outcomes, most frequent first.
func (t Tally) String() string {
	keys := sortedKeys(t)
	sort.SliceStable(keys, func(i, j int) bool { return t[keys[i]] > t[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %6d  %s\n", t[k], k)
	}
	return b.String()
}
