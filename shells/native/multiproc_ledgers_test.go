package native_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/hostabi"
)

// snap is a ledger's content as one process saw it.
type snap struct {
	Absent bool   `json:"absent,omitempty"`
	Doc    string `json:"doc,omitempty"`
}

type recWrite struct {
	Ledger string `json:"ledger"`
	Before snap   `json:"before"`
	After  string `json:"after"`
}

// opRecord is one completed operation of a child, with the precondition it observed (the
// ledger contents it last read) and every write it made (before → after).
type opRecord struct {
	Proc     int             `json:"proc"`
	Seq      int             `json:"seq"`
	Op       childOp         `json:"op"`
	Changed  bool            `json:"changed"`
	Err      string          `json:"err,omitempty"`
	Observed map[string]snap `json:"observed"`
	Writes   []recWrite      `json:"writes"`
}

// recFiles records what an operation read and wrote through the real files (by the
// ledgers' short names: grants, activations).
type recFiles struct {
	hostabi.Files
	mu       sync.Mutex
	observed map[string]snap
	writes   []recWrite
}

func (r *recFiles) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observed, r.writes = map[string]snap{}, nil
}

func short(name string) string {
	return strings.TrimSuffix(filepath.Base(name), ".json")
}

func (r *recFiles) Read(ctx context.Context, name string) ([]byte, string, error) {
	doc, v, err := r.Files.Read(ctx, name)
	if err == nil {
		r.mu.Lock()
		r.observed[short(name)] = snap{Absent: doc == nil, Doc: string(doc)}
		r.mu.Unlock()
	}
	return doc, v, err
}

// Update records the content the change was made to and the content written.
func (r *recFiles) Update(ctx context.Context, name string, fn func([]byte, string) ([]byte, error)) error {
	var w *recWrite
	err := r.Files.Update(ctx, name, func(cur []byte, version string) ([]byte, error) {
		doc, err := fn(cur, version)
		if err == nil {
			w = &recWrite{Ledger: short(name), Before: snap{Absent: cur == nil, Doc: string(cur)}, After: string(doc)}
		}
		return doc, err
	})
	if err == nil && w != nil {
		r.mu.Lock()
		r.writes = append(r.writes, *w)
		r.mu.Unlock()
	}
	return err
}

var (
	mpConnectors = []string{"mcp-github", "mcp-memory"}
	mpAgents     = []string{"builtin:a0", "builtin:a1", "builtin:a2"}
	mpScopes     = []string{"read", "use", "write"}
)

func randomOp(rng *rand.Rand) childOp {
	o := childOp{Op: []string{"grant", "revoke", "activate", "deactivate"}[rng.IntN(4)],
		C: mpConnectors[rng.IntN(len(mpConnectors))], A: mpAgents[rng.IntN(len(mpAgents))]}
	switch o.Op {
	case "grant":
		o.Scopes = []string{}
		for _, s := range mpScopes {
			if rng.IntN(2) == 0 {
				o.Scopes = append(o.Scopes, s)
			}
		}
	case "activate":
		o.Scopes = []string{mpScopes[rng.IntN(len(mpScopes))]}
	}
	return o
}

func childLedgerOps() error {
	ctx := context.Background()
	proc, _ := strconv.Atoi(os.Getenv("GW_PROC"))
	n, _ := strconv.Atoi(os.Getenv("GW_N"))
	rec := &recFiles{}
	c, _, err := childClient(ctx, childOptions(), func(caps *hostabi.Capabilities) {
		rec.Files = caps.Files
		if os.Getenv("GW_BLIND_WRITES") == "1" {
			rec.Files = blindFiles{caps.Files}
		}
		caps.Files = rec
	})
	if err != nil {
		return err
	}
	f, err := os.Create(os.Getenv("GW_OUT"))
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	rng := rand.New(rand.NewPCG(uint64(proc), 42))
	for i := range n {
		o := randomOp(rng)
		rec.reset()
		changed, err := runOp(ctx, c, o)
		r := opRecord{Proc: proc, Seq: i, Op: o, Changed: changed, Observed: rec.observed, Writes: rec.writes}
		if err != nil {
			r.Err = err.Error()
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// entries is a ledger's logical content: grants {c: {a: scopes}}, activations {c: {a: bool}}.
func entries(t *testing.T, ledger string, s snap) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	if s.Absent {
		return out
	}
	var root map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.Doc), &root), "%q", s.Doc)
	m := root
	if ledger == "activations" {
		require.EqualValues(t, 1, root["version"])
		m, _ = root["activations"].(map[string]any)
	}
	for c, v := range m {
		out[c] = map[string]any{}
		for a, x := range v.(map[string]any) {
			out[c][a] = x
		}
	}
	return out
}

func sortedUnique(s []string) []any {
	c := slices.Clone(s)
	sort.Strings(c)
	c = slices.Compact(c)
	out := make([]any, len(c))
	for i, x := range c {
		out[i] = x
	}
	return out
}

// apply is the serial meaning of an operation on one ledger.
func apply(o childOp, ledger string, in map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for c, m := range in {
		out[c] = map[string]any{}
		for a, v := range m {
			out[c][a] = v
		}
	}
	set := func(v any) {
		if out[o.C] == nil {
			out[o.C] = map[string]any{}
		}
		out[o.C][o.A] = v
	}
	del := func() {
		delete(out[o.C], o.A)
		if len(out[o.C]) == 0 {
			delete(out, o.C)
		}
	}
	_, has := out[o.C][o.A]
	switch ledger + " " + o.Op {
	case "grants grant":
		set(sortedUnique(o.Scopes))
	case "grants revoke", "activations revoke", "activations deactivate":
		del()
	case "grants activate":
		if !has {
			set(sortedUnique(o.Scopes))
		}
	case "activations activate":
		set(true)
	}
	return out
}

func canonical(v any) string { return mustMarshal(v) }

func version(s snap) string {
	if s.Absent {
		return "absent"
	}
	sum := sha256.Sum256([]byte(s.Doc))
	return hex.EncodeToString(sum[:8])
}

// serialOrder finds an order of all writes in which each one's precondition is the
// content the previous one produced, starting from no file (Hierholzer's algorithm on the
// multigraph version → version). It returns the order, or nil when there is none — which
// is what a lost update (two writes from one version, one of them overwritten) leaves.
func serialOrder(writes []recWrite) []int {
	out := map[string][]int{}
	for i, w := range writes {
		v := version(w.Before)
		out[v] = append(out[v], i)
	}
	var order []int
	var visit func(v string)
	visit = func(v string) {
		for len(out[v]) > 0 {
			i := out[v][len(out[v])-1]
			out[v] = out[v][:len(out[v])-1]
			visit(version(snap{Doc: writes[i].After}))
			order = append(order, i)
		}
	}
	visit("absent")
	if len(order) != len(writes) {
		return nil
	}
	slices.Reverse(order)
	cur := "absent"
	for _, i := range order {
		if version(writes[i].Before) != cur {
			return nil
		}
		cur = version(snap{Doc: writes[i].After})
	}
	return order
}

// runLedgerStress runs procs child processes of each random operations on one home and
// returns every record they logged.
func runLedgerStress(t *testing.T, procs, each int, env ...string) ([]opRecord, string, time.Duration) {
	t.Helper()
	home := t.TempDir()
	dir := t.TempDir()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, procs)
	outputs := make([][]byte, procs)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := child(t, "ledger-ops", append([]string{"GW_HOME=" + home, "GW_PROC=" + strconv.Itoa(p), "GW_N=" + strconv.Itoa(each),
				"GW_OUT=" + filepath.Join(dir, fmt.Sprintf("p%d.jsonl", p))}, env...)...)
			outputs[p], errs[p] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for p := range procs {
		require.NoError(t, errs[p], "process %d: %s", p, outputs[p])
	}
	var records []opRecord
	for p := range procs {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("p%d.jsonl", p)))
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		n := 0
		for sc.Scan() {
			var r opRecord
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
			records = append(records, r)
			n++
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
		require.Equal(t, each, n, "process %d reported every operation", p)
	}
	return records, home, elapsed
}

// checkLedgerStress returns every violation of serializability in the records: a failed
// operation, a write that is not its operation's effect on what it replaced, an operation
// that wrote nothing although something was left to do, writes that fit no serial history
// per ledger, or a file that is not the serial result of the operations.
func checkLedgerStress(t *testing.T, records []opRecord, home string) (problems []string, summary string) {
	t.Helper()
	writes := map[string][]recWrite{}
	writeOps := map[string][]childOp{}
	failed, wrote, noops := 0, 0, 0
	for _, r := range records {
		if r.Err != "" {
			failed++
			problems = append(problems, fmt.Sprintf("process %d op %d %+v failed: %s", r.Proc, r.Seq, r.Op, r.Err))
			continue
		}
		written := map[string]bool{}
		for _, w := range r.Writes {
			written[w.Ledger] = true
			writes[w.Ledger] = append(writes[w.Ledger], w)
			writeOps[w.Ledger] = append(writeOps[w.Ledger], r.Op)
			want := apply(r.Op, w.Ledger, entries(t, w.Ledger, w.Before))
			if canonical(want) != canonical(entries(t, w.Ledger, snap{Doc: w.After})) {
				problems = append(problems, fmt.Sprintf("process %d op %d %+v: the write is not the operation's effect on what it replaced", r.Proc, r.Seq, r.Op))
			}
		}
		// An operation whose first attempt wrote one ledger and then met a concurrent change
		// in the other restarts and may then report changed=false; it never reports a change
		// it did not write.
		if r.Changed && len(r.Writes) == 0 {
			problems = append(problems, fmt.Sprintf("process %d op %d %+v reported a change it did not write", r.Proc, r.Seq, r.Op))
		}
		if len(r.Writes) > 0 {
			wrote++
		} else {
			noops++
		}
		for ledger, seen := range r.Observed {
			if written[ledger] {
				continue
			}
			e := entries(t, ledger, seen)
			if canonical(e) != canonical(apply(r.Op, ledger, e)) {
				problems = append(problems, fmt.Sprintf("process %d op %d %+v wrote nothing to %s although the content it read needed the change", r.Proc, r.Seq, r.Op, ledger))
			}
		}
	}
	var hist []string
	for _, ledger := range []string{"grants", "activations"} {
		ws := writes[ledger]
		order := serialOrder(ws)
		if order == nil {
			problems = append(problems, fmt.Sprintf("%s: the %d writes fit no serial history: an update was lost", ledger, len(ws)))
			continue
		}
		final, err := os.ReadFile(filepath.Join(home, "connectors", ledger+".json"))
		require.NoError(t, err)
		if ws[order[len(order)-1]].After != string(final) {
			problems = append(problems, ledger+": the file is not the last write of the history")
		}
		// Replaying the operations in that order from nothing gives the file.
		state := map[string]map[string]any{}
		for _, i := range order {
			state = apply(writeOps[ledger][i], ledger, state)
		}
		if canonical(state) != canonical(entries(t, ledger, snap{Doc: string(final)})) {
			problems = append(problems, ledger+": the file is not the serial result of the operations")
		}
		hist = append(hist, fmt.Sprintf("%s: %d writes in one serial history", ledger, len(ws)))
	}
	summary = fmt.Sprintf("%d operations: %d wrote, %d found nothing to do, %d failed; %v", len(records), wrote, noops, failed, hist)
	return problems, summary
}

// Eight processes run 1000 random grant/revoke/activate/deactivate operations each on one
// home. Every write must fit one serial history per ledger that starts from no file and
// ends at the file on disk, every write must be its operation's effect on the content it
// replaced, every operation that wrote nothing must have found nothing to do, and
// replaying the operations in that history must give the files.
func TestMultiProcessLedgerOperations(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process stress test; runs without -short")
	}
	const procs, each = 8, 1000
	records, home, elapsed := runLedgerStress(t, procs, each)
	problems, summary := checkLedgerStress(t, records, home)
	require.Empty(t, problems)
	t.Logf("%d processes x %d operations in %s: %s", procs, each, elapsed.Round(time.Millisecond), summary)
}

// The check above is not vacuous: with a ledger that overwrites without comparing versions
// (a blind write, what a missing lock or version check would do), it finds lost updates.
func TestMultiProcessLedgerCheckCatchesLostUpdates(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process stress test; runs without -short")
	}
	records, home, _ := runLedgerStress(t, 4, 300, "GW_BLIND_WRITES=1")
	problems, summary := checkLedgerStress(t, records, home)
	require.NotEmpty(t, problems, summary)
	t.Logf("blind writes: %d problems found, e.g. %s", len(problems), problems[0])
}

// blindFiles patches a copy of the file read before taking its lock (a broken, non-atomic
// read-modify-write, for the negative control): a concurrent write in between is lost. It
// is also slow between the read and the write, as a loaded machine can be, so concurrent
// writers overlap in every run.
type blindFiles struct{ hostabi.Files }

func (b blindFiles) Update(ctx context.Context, name string, fn func([]byte, string) ([]byte, error)) error {
	stale, version, err := b.Files.Read(ctx, name)
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Millisecond)
	return b.Files.Update(ctx, name, func([]byte, string) ([]byte, error) { return fn(stale, version) })
}
