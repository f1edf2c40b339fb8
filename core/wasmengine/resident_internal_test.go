package wasmengine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// tokenize names facts of q by version as a host would: the token of a fact is a hash of
// its bytes (so equal bytes, equal token). Each fact gets one with probability p.
func tokenize(q *core.Query, p float64, r *rand.Rand) {
	q.Tokens = map[string]string{}
	for k, v := range q.Facts {
		if r == nil || r.Float64() < p {
			h := sha256.Sum256(v)
			q.Tokens[k] = hex.EncodeToString(h[:8])
		}
	}
}

// viaJSON is what DecideJSON answers for the typed query (the query as json.Marshal
// writes it: what Decide sends when it ignores tokens).
func viaJSON(t testing.TB, e *Engine, q *core.Query) ([]byte, error) {
	t.Helper()
	in, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return e.DecideJSON(context.Background(), nil, in)
}

// viaJSONCount counts the queries sameAsJSON saw answered through JSON (Decide's
// fallback) instead of on the resident path.
var viaJSONCount, residentCount int

// sameAsJSON decides q on the resident path and through JSON and fails unless both give
// the same bytes or the same error. It returns the decision.
func sameAsJSON(t testing.TB, e *Engine, q *core.Query, what string) *core.Decision {
	t.Helper()
	want, werr := viaJSON(t, e, q)
	got, gerr := e.decideResident(context.Background(), nil, q)
	if gerr == errViaJSON {
		viaJSONCount++
		var d *core.Decision
		got, gerr = viaJSON(t, e, q) // Decide's fallback
		if gerr == nil {
			d, _ = core.ParseDecision(got)
		}
		return d
	}
	residentCount++
	if !bytes.Equal(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s: resident facts decide\n %s (err %v)\nDecideJSON decides\n %s (err %v)", what, got, gerr, want, werr)
	}
	if gerr != nil {
		return nil
	}
	d, err := core.ParseDecision(got)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newTestEngine(t testing.TB, data []byte, opts ...Option) *Engine {
	t.Helper()
	e, err := New(context.Background(), append([]Option{WithData(data)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

func typed(t testing.TB, b []byte) *core.Query {
	t.Helper()
	q := new(core.Query)
	if err := json.Unmarshal(b, q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestResidentScenarios: the benchmarks' scenarios (gate, tripwire, refresh, listings at
// 10x10), every fact tokened, decided twice (parsed, then resident) and in turn, give
// DecideJSON's bytes.
func TestResidentScenarios(t *testing.T) {
	size := nodiff.Sizes[0]
	e := newTestEngine(t, size.Catalog().Data, WithPoolSize(1))
	var scs []nodiff.Scenario
	scs = append(scs, nodiff.GateFirst())
	scs = append(scs, nodiff.GateMix()...)
	scs = append(scs, nodiff.Tripwire()...)
	scs = append(scs, nodiff.Refresh()...)
	scs = append(scs, size.Listings()...)
	for round := range 2 {
		for _, sc := range scs {
			q := typed(t, sc.Query)
			tokenize(q, 1, nil)
			d := sameAsJSON(t, e, q, fmt.Sprintf("%s (round %d)", sc.Name, round))
			if d == nil {
				t.Fatalf("%s: no decision", sc.Name)
			}
		}
	}
	if e.Stats().ResidentFacts == 0 {
		t.Fatal("no fact stayed resident")
	}
}

// TestResidentEpisodes: generated episodes of every operation (nodiff's generator, on the
// synthetic and the embedded-like hostile catalogs), with a random share of facts
// tokened, decide byte for byte as DecideJSON, on an engine whose instances keep their
// resident facts from one query to the next.
func TestResidentEpisodes(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 15
	}
	viaJSONCount, residentCount = 0, 0
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for ci, cat := range []*nodiff.Catalog{nodiff.Synthetic(), nodiff.Hostile()} {
		e := newTestEngine(t, cat.Data, WithPoolSize(1))
		r := rand.New(rand.NewPCG(seed, uint64(ci)))
		for fi, op := range nodiff.Ops {
			g := nodiff.NewGen(cat, seed, uint64(ci)<<8|uint64(fi))
			g.Manifest = e.Manifest()
			queries := 0
			for ep := 0; queries < n; ep++ {
				episode := g.Episode(op)
				for {
					q := new(core.Query)
					if err := json.Unmarshal(episode.Query(), q); err != nil {
						queries++ // not a typed query (the generator plays a broken host)
						break
					}
					tokenize(q, 0.8, r)
					d := sameAsJSON(t, e, q, fmt.Sprintf("%s on %s, episode %d", op, cat.Name, ep))
					queries++
					if !episode.Answer(d) {
						break
					}
				}
			}
		}
		st := e.Stats()
		t.Logf("catalog %s: %d resident facts, %d resets, %d resident bytes", cat.Name, st.ResidentFacts, st.Resets, st.ResidentBytes)
	}
	t.Logf("%d queries on the resident path, %d through JSON", residentCount, viaJSONCount)
	if viaJSONCount*10 > residentCount {
		t.Fatalf("%d queries went through JSON, %d on the resident path: the test compares too little", viaJSONCount, residentCount)
	}
}

// TestResidentTokenChange: a key whose token changes is decided on its new value.
func TestResidentTokenChange(t *testing.T) {
	size := nodiff.Sizes[0]
	e := newTestEngine(t, size.Catalog().Data, WithPoolSize(1))
	allow := typed(t, nodiff.GateAllow().Query)
	tokenize(allow, 1, nil)
	if d := sameAsJSON(t, e, allow, "allow"); d.Error != nil {
		t.Fatalf("allow: %+v", d.Error)
	}
	// The same keys, other values (the connection lost its scopes; not connected): new tokens.
	for _, sc := range nodiff.GateMix()[2:4] {
		q := typed(t, sc.Query)
		tokenize(q, 1, nil)
		if q.Tokens["conn"] == allow.Tokens["conn"] {
			t.Fatalf("%s: the scenario does not change the connection", sc.Name)
		}
		d := sameAsJSON(t, e, q, sc.Name)
		if d.Error == nil {
			t.Fatalf("%s: decided on the old connection: %s", sc.Name, d.Result)
		}
	}
	if d := sameAsJSON(t, e, allow, "allow again"); d.Error != nil {
		t.Fatalf("allow again: %+v", d.Error)
	}
}

// TestResidentBound: facts of ever new versions (distinct tokens) never take an instance's
// memory past the data image, the bound and one query's worth of heap; the resident
// values are reset when the bound is reached.
func TestResidentBound(t *testing.T) {
	const limit = 4 << 20
	size := nodiff.Size{Connectors: 10, Agents: 300}
	e := newTestEngine(t, size.Catalog().Data, WithPoolSize(1), WithResidentLimit(limit))
	lg := typed(t, size.Listings()[1].Query) // list_grants: the whole grants ledger
	var fact map[string]any
	if err := json.Unmarshal(lg.Facts["grants"], &fact); err != nil {
		t.Fatal(err)
	}
	var first, peak uint64
	for i := range 60 {
		fact["version"] = fmt.Sprintf("v%04d", i) // a new version of the ledger
		lg.Facts["grants"], _ = json.Marshal(fact)
		tokenize(lg, 1, nil)
		sameAsJSON(t, e, lg, fmt.Sprintf("version %d", i))
		st := e.Stats()
		if st.ResidentBytes > limit {
			t.Fatalf("version %d: %d resident bytes, bound %d", i, st.ResidentBytes, limit)
		}
		if i == 0 {
			first = st.MemoryBytes
		}
		peak = max(peak, st.MemoryBytes)
	}
	st := e.Stats()
	if st.Resets == 0 {
		t.Fatal("60 versions of a ledger never reset the resident facts")
	}
	// After the first query the memory holds one version plus the query's heap; it may
	// grow to the bound, never past it plus that.
	if peak > first+limit+1<<20 {
		t.Fatalf("memory grew from %d to %d bytes (bound %d)", first, peak, limit)
	}
	t.Logf("query %d bytes; memory %d → %d bytes; %d resets", len(lg.Facts["grants"]), first, peak, st.Resets)

	// DecideJSON parses its whole query above the resident values: one that would take
	// the two past the bound drops them first.
	in, _ := json.Marshal(lg)
	if _, err := e.DecideJSON(context.Background(), nil, in); err != nil {
		t.Fatal(err)
	}
	if after := e.Stats(); after.ResidentFacts != 0 || after.Resets != st.Resets+1 || after.MemoryBytes > peak {
		t.Fatalf("after a large DecideJSON: %+v (before %+v)", after, st)
	}
}

// TestResidentConcurrent: goroutines deciding tokened queries on a shared engine (a pool
// of two) get DecideJSON's bytes; run with -race.
func TestResidentConcurrent(t *testing.T) {
	size := nodiff.Sizes[0]
	e := newTestEngine(t, size.Catalog().Data, WithPoolSize(2))
	scs := append(nodiff.GateMix(), size.Listings()...)
	want := make([][]byte, len(scs))
	qs := make([]*core.Query, len(scs))
	for i, sc := range scs {
		qs[i] = typed(t, sc.Query)
		tokenize(qs[i], 1, nil)
		want[i], _ = viaJSON(t, e, qs[i])
	}
	testenv.InParallel(t, 4, 60, func(g, i int) error {
		k := (i + g) % len(scs)
		d, err := e.Decide(context.Background(), qs[k])
		if err != nil {
			return err
		}
		got, _ := json.Marshal(d)
		w, _ := core.ParseDecision(want[k])
		wj, _ := json.Marshal(w)
		if !bytes.Equal(got, wj) {
			return fmt.Errorf("%s: %s, want %s", scs[k].Name, got, wj)
		}
		return nil
	})
}

// TestResidentRefusedFact: a tokened fact the engine boundary refuses (a fraction, a
// nesting too deep) gets exactly DecideJSON's error, offset included, every time it is
// carried, and nothing of it stays resident.
func TestResidentRefusedFact(t *testing.T) {
	e := newTestEngine(t, nodiff.Sizes[0].Catalog().Data, WithPoolSize(1))
	deep := bytes.Repeat([]byte("["), 70)
	deep = append(deep, bytes.Repeat([]byte("]"), 70)...)
	for _, bad := range []string{`1.5`, string(deep), `{"a":"\ud800"}`} {
		q := typed(t, nodiff.GateAllow().Query)
		q.Facts["now"] = json.RawMessage(bad)
		tokenize(q, 1, nil)
		_, want := viaJSON(t, e, q)
		if want == nil {
			t.Fatalf("%.20s: DecideJSON accepted it", bad)
		}
		for range 2 {
			if _, err := e.Decide(context.Background(), q); fmt.Sprint(err) != fmt.Sprint(want) {
				t.Fatalf("%.20s: Decide says %v, DecideJSON %v", bad, err, want)
			}
		}
	}
	if n := e.Stats().ResidentFacts; n != 0 {
		t.Fatalf("%d facts resident after refused queries", n)
	}
}

// TestResidentCancellation: a typed decision on resident facts stops when its context
// ends; the closed instance is replaced by a fresh clone holding no resident fact, and
// the next decision parses its facts again and is right.
func TestResidentCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newTestEngine(t, []byte(`{}`), WithModule(testdataModule(t, "slow")), WithPoolSize(1))
	v, err := e.variantFor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q := func(n int) *core.Query {
		return &core.Query{Op: "x", Args: json.RawMessage(`{}`),
			Facts: map[string]json.RawMessage{"n": json.RawMessage(fmt.Sprint(n))}, Tokens: map[string]string{"n": fmt.Sprint("n=", n)}}
	}
	if d, err := e.Decide(ctx, q(3)); err != nil || string(d.Result) != "6" {
		t.Fatalf("n=3: %v %v", d, err)
	}
	before := <-v.pool
	v.pool <- before
	if len(before.res.values) != 1 {
		t.Fatalf("%d resident values, want 1", len(before.res.values))
	}
	dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer dcancel()
	if _, err := e.Decide(dctx, q(800)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	after := <-v.pool
	v.pool <- after
	if after == nil || after == before || !before.mod.IsClosed() {
		t.Fatal("the interrupted instance was not replaced")
	}
	if len(after.res.values) != 0 || after.res.top != e.dataHeap {
		t.Fatal("the fresh instance holds resident facts")
	}
	if d, err := e.Decide(ctx, q(3)); err != nil || string(d.Result) != "6" {
		t.Fatalf("n=3 after: %v %v", d, err)
	}
}

// TestResidentAbort: a policy abort on resident facts is an AbortError; the instance is
// replaced and the next decision is right.
func TestResidentAbort(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, []byte(`{}`), WithModule(testdataModule(t, "abort")), WithPoolSize(1))
	q := func(facts string) *core.Query {
		q := &core.Query{Op: "x", Args: json.RawMessage(`{}`)}
		if err := json.Unmarshal([]byte(facts), &q.Facts); err != nil {
			t.Fatal(err)
		}
		tokenize(q, 1, nil)
		return q
	}
	var abort *AbortError
	if _, err := e.Decide(ctx, q(`{"a":true,"b":true}`)); !errors.As(err, &abort) {
		t.Fatalf("got %v, want an AbortError", err)
	}
	if d, err := e.Decide(ctx, q(`{"a":true,"b":false}`)); err != nil || string(d.Result) != `"a"` {
		t.Fatalf("after the abort: %v %v", d, err)
	}
}

func testdataModule(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResidentLimitOff: WithResidentLimit(0) turns resident facts off (tokens ignored, the
// same decisions); a negative limit is refused.
func TestResidentLimitOff(t *testing.T) {
	e := newTestEngine(t, nodiff.Sizes[0].Catalog().Data, WithPoolSize(1), WithResidentLimit(0))
	q := typed(t, nodiff.GateAllow().Query)
	tokenize(q, 1, nil)
	d, err := e.Decide(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := viaJSON(t, e, q)
	w, err := core.ParseDecision(out)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(d)
	if want, _ := json.Marshal(w); !bytes.Equal(got, want) {
		t.Fatalf("got %s, want %s", got, want)
	}
	if n := e.Stats().ResidentFacts; n != 0 {
		t.Fatalf("%d facts resident with the limit at 0", n)
	}
	if _, err := New(context.Background(), WithResidentLimit(-1)); err == nil {
		t.Fatal("a negative limit was accepted")
	}
}
