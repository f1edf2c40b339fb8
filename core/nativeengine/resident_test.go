package nativeengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// tokens hands out synthetic tokens as a host does: one per distinct fact content, never
// reused for other bytes.
type tokens struct {
	mu sync.Mutex
	m  map[string]string
}

func (ts *tokens) of(raw []byte) string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]string{}
	}
	t, ok := ts.m[string(raw)]
	if !ok {
		t = fmt.Sprintf("test:%d", len(ts.m)+1)
		ts.m[string(raw)] = t
	}
	return t
}

// typed decodes a query's JSON and names its facts by tokens (every other fact when
// some is set, to mix resident facts with facts parsed per query).
func typed(t testing.TB, q []byte, ts *tokens, some bool) *core.Query {
	t.Helper()
	var tq core.Query
	if err := json.Unmarshal(q, &tq); err != nil {
		return nil // a query no typed query can be (the generator spoils some)
	}
	tq.Tokens = map[string]string{}
	i := 0
	for k, raw := range tq.Facts {
		if i++; !some || i%2 == 0 {
			tq.Tokens[k] = ts.of(raw)
		}
	}
	return &tq
}

// sameDecision fails unless the typed decision is the one DecideJSON gave, field by
// field and byte for byte.
func sameDecision(t testing.TB, name string, q []byte, want []byte, wantErr error, got *core.Decision, gotErr error) {
	t.Helper()
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%s: errors differ: DecideJSON %v, Decide %v\n%s", name, wantErr, gotErr, q)
	}
	if wantErr != nil {
		return
	}
	w, err := core.ParseDecision(want)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w, got) {
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(got)
		t.Fatalf("%s: decisions differ\n DecideJSON %s\n Decide     %s\n query %s", name, wb, gb, q)
	}
}

type heldDecision struct {
	name    string
	q, want []byte
	wantErr error
	got     *core.Decision
	gotErr  error
}

// The typed path (input built from the query's parts, facts resident by token) decides
// every generated query of every operation exactly as DecideJSON decides its JSON: with
// every fact resident, with some, with none kept (a bound of 0) and with a bound so small
// that facts are evicted all the time.
func TestDecideTypedMatchesJSON(t *testing.T) {
	ctx := context.Background()
	per := 40
	if testing.Short() {
		per = 12
	}
	for ci, cat := range []*nodiff.Catalog{nodiff.Synthetic(), nodiff.Hostile()} {
		engines := map[string]*nativeengine.Engine{}
		for _, c := range []struct {
			name  string
			bound int
		}{{"default", nativeengine.DefaultResidentBytes}, {"none", 0}, {"tiny", 16 << 10}} {
			e, err := nativeengine.New(ctx, nativeengine.WithData(cat.Data), nativeengine.WithResidentBytes(c.bound))
			if err != nil {
				t.Fatal(err)
			}
			engines[c.name] = e
		}
		ref := engines["none"]
		ts := &tokens{}
		g := nodiff.NewGen(cat, 15, uint64(ci))
		g.Manifest = ref.Manifest()
		decided := 0
		// Decisions are checked again after many more evaluations: nothing in them may
		// point into an evaluation's arena, which the next evaluation overwrites.
		var held []heldDecision
		for _, op := range nodiff.Ops {
			for n := 0; n < per; {
				ep := g.Episode(op)
				for ; n < per; n++ {
					q := ep.Query()
					want, wantErr := ref.DecideJSON(ctx, nil, q)
					if tq := typed(t, q, ts, false); tq != nil {
						// The typed query's JSON is the reference (what core.DecideTyped sends).
						qj, err := json.Marshal(tq)
						if err != nil {
							t.Fatal(err)
						}
						tw, twErr := ref.DecideJSON(ctx, nil, qj)
						for name, e := range engines {
							for _, some := range []bool{false, true} {
								got, gotErr := e.Decide(ctx, typed(t, q, ts, some))
								name := fmt.Sprintf("%s on %s (%s, some %v)", op, cat.Name, name, some)
								sameDecision(t, name, qj, tw, twErr, got, gotErr)
								held = append(held, heldDecision{name, qj, tw, twErr, got, gotErr})
								decided++
							}
						}
					}
					var d *core.Decision
					if wantErr == nil {
						d, _ = core.ParseDecision(want)
					}
					if !ep.Answer(d) {
						n++
						break
					}
				}
			}
		}
		for _, h := range held {
			sameDecision(t, h.name+", checked again later", h.q, h.want, h.wantErr, h.got, h.gotErr)
		}
		if facts, _ := engines["default"].ResidentStats(); facts == 0 {
			t.Errorf("catalog %s: no fact stayed resident", cat.Name)
		}
		t.Logf("catalog %s: %d typed decisions, %d distinct facts", cat.Name, decided, len(ts.m))
	}
}

// A malformed fact is refused as core.CheckQuery refuses it in a query's JSON, whether
// it has a token or not, every time (a refused fact is not kept).
func TestDecideTypedRefusesMalformedFacts(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, embeddedData(t))
	deep := strings.Repeat("[", core.MaxQueryDepth-1) + strings.Repeat("]", core.MaxQueryDepth-1)
	ok := strings.Repeat("[", core.MaxQueryDepth-2) + strings.Repeat("]", core.MaxQueryDepth-2)
	for _, tc := range []struct {
		fact   string
		reason string
	}{
		{`1.5`, "numbers must be integers"},
		{`{"a":9007199254740992}`, "numbers must be integers"},
		{"\"\xff\"", "invalid UTF-8"},
		{`"\ud800"`, "lone surrogate"},
		{`{"a":}`, "invalid value"},
		{`{"a":1} x`, "data after the fact"},
		{deep, "nesting deeper than 64"},
		{ok, ""},
		{` {"a" : [1, 2]} `, ""},
	} {
		for round := range 2 {
			for _, tok := range []string{"", "malformed:" + tc.fact} {
				q := &core.Query{Op: "list_grants", Args: json.RawMessage(`{}`),
					Facts:  map[string]json.RawMessage{"grants": json.RawMessage(tc.fact)},
					Tokens: map[string]string{"grants": tok}}
				_, err := e.Decide(ctx, q)
				_, old := core.DecideTyped(ctx, e, q)
				if tc.reason == "" {
					if err != nil || old != nil {
						t.Errorf("%q (round %d, token %q): refused: %v / %v", tc.fact, round, tok, err, old)
					}
					continue
				}
				if !errors.Is(err, core.ErrMalformedQuery) || !strings.Contains(err.Error(), tc.reason) || old == nil {
					t.Errorf("%q (round %d, token %q): %v, want %q (core.DecideTyped: %v)", tc.fact, round, tok, err, tc.reason, old)
				}
			}
		}
	}
	if n, _ := e.ResidentStats(); n != 2 {
		t.Errorf("%d facts resident, want the 2 well-formed ones", n)
	}
}

// The resident facts stay within their bound: the least recently used go, a fact larger
// than the bound is used but not kept, and what is kept still decides right.
func TestResidentBound(t *testing.T) {
	ctx := context.Background()
	const bound = 256 << 10
	e, err := nativeengine.New(ctx, nativeengine.WithData(embeddedData(t)), nativeengine.WithResidentBytes(bound))
	if err != nil {
		t.Fatal(err)
	}
	ref := newEngine(t, embeddedData(t))
	grants := func(agents int) json.RawMessage {
		m := map[string]any{}
		for a := range agents {
			m[fmt.Sprintf("installed:agent-%04d", a)] = []string{"gmail.readonly"}
		}
		b, _ := json.Marshal(map[string]any{"ledger": "connectors/grants.json", "path": []string{}, "file": "/h/grants.json",
			"found": true, "version": fmt.Sprint(agents), "exists": true, "shape": []string{"object"},
			"value": map[string]any{"google": m}})
		return b
	}
	check := func(tok string, fact json.RawMessage) {
		t.Helper()
		q := &core.Query{Op: "list_grants", Args: json.RawMessage(`{}`), Round: 1,
			Facts: map[string]json.RawMessage{"grants": fact}, Tokens: map[string]string{"grants": tok}}
		got, err := e.Decide(ctx, q)
		qj, _ := json.Marshal(q)
		want, wantErr := ref.DecideJSON(ctx, nil, qj)
		sameDecision(t, tok, qj, want, wantErr, got, err)
		if _, size := e.ResidentStats(); size > bound {
			t.Fatalf("after %s: %d resident bytes, bound %d", tok, size, bound)
		}
	}
	for i := range 40 {
		check(fmt.Sprintf("small:%d", i), grants(20+i))
	}
	n, size := e.ResidentStats()
	if n >= 40 || n < 2 || size < bound/2 {
		t.Errorf("%d facts in %d bytes: the bound %d should have evicted some and kept several", n, size, bound)
	}
	// The most recent are kept: deciding them again adds nothing.
	check("small:39", grants(59))
	if n2, _ := e.ResidentStats(); n2 != n {
		t.Errorf("a resident fact was parsed again: %d → %d", n, n2)
	}
	check("huge", grants(5000))
	if n3, size := e.ResidentStats(); n3 != n || size > bound {
		t.Errorf("a fact over the bound changed the resident set: %d facts, %d bytes", n3, size)
	}
}

// Concurrent decisions share resident facts (run with -race: generated code never
// writes to its input); every decision is the one the query's JSON gives.
func TestConcurrentResidentFacts(t *testing.T) {
	ctx := context.Background()
	e, eps := listingEpisodes(t, 10, 20)
	ts := &tokens{}
	type job struct {
		q    *core.Query
		want episode
	}
	var jobs []job
	for _, op := range []string{"status", "list_grants"} {
		jobs = append(jobs, job{typed(t, eps[op].Query, ts, false), eps[op]})
	}
	testenv.InParallel(t, 8, 30, func(w, i int) error {
		j := jobs[(w+i)%len(jobs)]
		got, err := e.Decide(ctx, j.q)
		if err != nil {
			return err
		}
		want, _ := core.ParseDecision(j.want.Decision)
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s: decision changed under concurrency", j.want.Name)
		}
		return nil
	})
	if n, _ := e.ResidentStats(); n == 0 {
		t.Error("nothing resident")
	}
}

// The size limit is the one core.DecideTyped's query meets: a fact of 3 MB whose '<'
// encoding/json writes as \u003c makes an 18 MB query, refused with or without a token.
func TestDecideTypedSizeLimit(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, embeddedData(t))
	fact := json.RawMessage(`"` + strings.Repeat("<", 3<<20) + `"`)
	for _, tok := range []string{"", "big:1"} {
		q := &core.Query{Op: "list_grants", Args: json.RawMessage(`{}`),
			Facts: map[string]json.RawMessage{"grants": fact}, Tokens: map[string]string{"grants": tok}}
		_, err := e.Decide(ctx, q)
		if !errors.Is(err, core.ErrMalformedQuery) || !strings.Contains(err.Error(), "exceeds the limit") {
			t.Errorf("token %q: %v, want the size limit", tok, err)
		}
	}
}
