package decisionlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/grantwire/grantwire/core"
)

// Change is a logged decision whose outcome differs under the replayed policy.
type Change struct {
	Entry      int    `json:"entry"` // 1-based position in the log
	DecisionID string `json:"decision_id"`
	Op         string `json:"op"`
	Revision   string `json:"revision,omitempty"` // the revision that made the logged decision
	// Before and After summarise the logged and the replayed decision ("ok", "need", or
	// an error code, with the effect kinds), and What says which parts differ.
	Before string          `json:"before"`
	After  string          `json:"after"`
	What   []string        `json:"what"`
	Logged json.RawMessage `json:"logged"`
	Now    json.RawMessage `json:"now"`
}

// Skip is a logged entry that could not be replayed, and why.
type Skip struct {
	Entry      int    `json:"entry"`
	DecisionID string `json:"decision_id"`
	Reason     string `json:"reason"`
}

// Report is the outcome of [Replay].
type Report struct {
	Entries   int            `json:"entries"`
	Replayed  int            `json:"replayed"`
	Unchanged int            `json:"unchanged"`
	Changes   []Change       `json:"changes"`
	Skipped   []Skip         `json:"skipped"`
	Revisions map[string]int `json:"revisions"` // logged revision → number of entries
}

// Replay re-evaluates every decision of a log with engine and reports those whose
// decision would change: impact analysis for a policy change. Each logged input (already
// redacted) is decided again, the new decision is redacted the same way, and the two are
// compared in canonical JSON. Entries of another path, entries without a result (a host
// failure before the core decided) and inputs the engine cannot evaluate are skipped
// with their reason.
func Replay(ctx context.Context, log io.Reader, engine core.Engine) (*Report, error) {
	rep := &Report{Changes: []Change{}, Skipped: []Skip{}, Revisions: map[string]int{}}
	err := NewReader(log).Each(func(e *Event, n int) {
		rep.Entries++
		rep.Revisions[e.Revision]++
		skip := func(reason string) {
			rep.Skipped = append(rep.Skipped, Skip{Entry: n, DecisionID: e.DecisionID, Reason: reason})
		}
		switch {
		case strings.Trim(e.Path, "/") != Path:
			skip(fmt.Sprintf("path %q is not %s", e.Path, Path))
			return
		case e.Result == nil || bytes.Equal(e.Result, []byte("null")):
			skip("no result: the operation ended on a host failure before the core decided")
			return
		case e.Input == nil:
			skip("no input")
			return
		}
		ch, err := replayOne(ctx, engine, e)
		if err != nil {
			skip(err.Error())
			return
		}
		rep.Replayed++
		if ch == nil {
			rep.Unchanged++
			return
		}
		ch.Entry = n
		rep.Changes = append(rep.Changes, *ch)
	})
	return rep, err
}

func replayOne(ctx context.Context, engine core.Engine, e *Event) (*Change, error) {
	in, err := Canonical(e.Input)
	if err != nil {
		return nil, fmt.Errorf("input: %v", err)
	}
	// Both sides are redacted the same way: a grantwire log already is (Redact is
	// idempotent), a log written by an OPA server running the bundle is not.
	old, err := Redact(in, e.Result)
	if err != nil {
		return nil, fmt.Errorf("logged result: %v", err)
	}
	now, err := engine.DecideJSON(ctx, nil, in)
	if err != nil {
		return nil, fmt.Errorf("engine: %v", err)
	}
	red, err := Redact(in, now)
	if err != nil {
		return nil, err
	}
	logged := old.Result
	if bytes.Equal(red.Result, logged) {
		return nil, nil
	}
	op, _ := core.OpOf(in)
	return &Change{
		DecisionID: e.DecisionID, Op: op, Revision: e.Revision,
		Before: Summary(logged), After: Summary(red.Result), What: differences(logged, red.Result),
		Logged: logged, Now: red.Result,
	}, nil
}

// Summary describes a decision in one line: "ok", "need clock.now, ..." or the error
// code, followed by the kinds of its effects.
func Summary(decision json.RawMessage) string {
	var d struct {
		Status string `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
		Needs   []struct{ Kind string } `json:"needs"`
		Effects []struct{ Kind string } `json:"effects"`
	}
	if json.Unmarshal(decision, &d) != nil {
		return "malformed"
	}
	var s string
	switch {
	case d.Status == core.StatusNeed:
		kinds := make([]string, len(d.Needs))
		for i, n := range d.Needs {
			kinds[i] = n.Kind
		}
		s = "need " + strings.Join(kinds, ", ")
	case d.Error != nil:
		s = "error " + d.Error.Code
	default:
		s = "ok"
	}
	if len(d.Effects) > 0 {
		kinds := make([]string, len(d.Effects))
		for i, e := range d.Effects {
			kinds[i] = e.Kind
		}
		s += " [" + strings.Join(kinds, ", ") + "]"
	}
	return s
}

// differences names the top-level members of two decisions that differ.
func differences(a, b []byte) []string {
	var x, y map[string]json.RawMessage
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	keys := map[string]bool{}
	for k := range x {
		keys[k] = true
	}
	for k := range y {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if !bytes.Equal(x[k], y[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
