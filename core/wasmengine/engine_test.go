package wasmengine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/nodiff"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// newEngine builds an engine with opts, failing t when it cannot, and closes it when t
// ends.
func newEngine(t testing.TB, opts ...wasmengine.Option) *wasmengine.Engine {
	t.Helper()
	e, err := wasmengine.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func testModule(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatalf("%v (rebuild with core/wasmengine/testdata/build.sh)", err)
	}
	return b
}

// memoryOnly is a hand-encoded module that imports env.memory and exports nothing.
var memoryOnly = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
	0x02, 0x0f, 0x01, // import section, 15 bytes, 1 import
	0x03, 'e', 'n', 'v', 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 0x01, // env.memory, min 1
}

// TestNewRejectsModules: a module that is not a grantwire policy gets ErrNotPolicy with a
// message saying what is wrong.
func TestNewRejectsModules(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		module []byte
		want   string
	}{
		{"not wasm", []byte("not a wasm module"), "invalid magic number"},
		{"empty module", []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}, "imports 0 memories, want 1"},
		{"memory only", memoryOnly, "missing export"},
		{"no grantwire entrypoints", testModule(t, "noentry"), "entrypoints grantwire/decide and grantwire/manifest are required"},
		{"host builtins", testModule(t, "hostbuiltin"), "needs host builtins [time.now_ns]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := wasmengine.New(ctx, wasmengine.WithModule(tc.module), wasmengine.WithPoolSize(1))
			if err == nil {
				e.Close(ctx)
				t.Fatal("New accepted the module")
			}
			if !errors.Is(err, wasmengine.ErrNotPolicy) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v; want ErrNotPolicy saying %q", err, tc.want)
			}
		})
	}
}

func TestNewRejectsOptions(t *testing.T) {
	ctx := context.Background()
	if _, err := wasmengine.New(ctx, wasmengine.WithPoolSize(0)); err == nil || !strings.Contains(err.Error(), "pool size 0") {
		t.Fatalf("pool size 0: %v", err)
	}
	if _, err := wasmengine.New(ctx, wasmengine.WithData([]byte(`{`))); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("bad data: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := wasmengine.New(ctx, wasmengine.WithCompilationCacheDir(file)); err == nil || !strings.Contains(err.Error(), "compilation cache") {
		t.Fatalf("cache dir is a file: %v", err)
	}
}

// TestAbortKeepsEngineUsable: a policy that aborts gives an *AbortError, and the engine
// (with its only instance replaced) answers the next query.
func TestAbortKeepsEngineUsable(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, wasmengine.WithModule(testModule(t, "abort")), wasmengine.WithPoolSize(1))
	for i := range 3 {
		_, err := e.DecideJSON(ctx, nil, []byte(`{"a":true,"b":true}`))
		var abort *wasmengine.AbortError
		if !errors.As(err, &abort) || !strings.Contains(abort.Message, "conflict") {
			t.Fatalf("round %d: conflicting query: %v, want an AbortError about the conflict", i, err)
		}
		out, err := e.DecideJSON(ctx, nil, []byte(`{"a":true}`))
		if err != nil || string(out) != `{"effects":[],"result":"a","status":"done"}` {
			t.Fatalf("round %d: after the abort: %s, %v", i, out, err)
		}
	}
}

// TestUndefined: a policy with no decision for the query gives core.ErrUndefined.
func TestUndefined(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, wasmengine.WithModule(testModule(t, "abort")), wasmengine.WithPoolSize(1))
	if _, err := e.DecideJSON(ctx, nil, []byte(`{}`)); !errors.Is(err, core.ErrUndefined) {
		t.Fatalf("got %v, want ErrUndefined", err)
	}
}

// drawnAnswers builds the wasm engine on the embedded catalog with a pool of three (closed
// when t ends), draws perOp queries of every operation from the generator seeded with seed,
// and keeps those the engine answers, with its answers given one at a time.
func drawnAnswers(t *testing.T, seed uint64, perOp int) (e *wasmengine.Engine, queries, want [][]byte) {
	t.Helper()
	ctx := context.Background()
	cat, err := catalog.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	e = newEngine(t, wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(3))
	g := nodiff.NewGen(nodiff.MustCatalog("embedded", cat.Data()), seed, 0)
	for _, op := range nodiff.Ops {
		for range perOp {
			q := g.Episode(op).Query()
			out, err := e.DecideJSON(ctx, nil, q)
			if err != nil {
				continue
			}
			queries, want = append(queries, q), append(want, out)
		}
	}
	return e, queries, want
}

// inParallel runs workers goroutines at once; worker w makes rounds calls decide(w, i, k,
// buf), the i-th for query k = (w*stride+i) mod n, each handed the buffer the call before
// returned. It fails t on the first error any worker returns.
func inParallel(t *testing.T, workers, rounds, stride, n int, decide func(w, i, k int, buf []byte) ([]byte, error)) {
	t.Helper()
	bufs := make([][]byte, workers)
	testenv.InParallel(t, workers, rounds, func(w, i int) (err error) {
		bufs[w], err = decide(w, i, (w*stride+i)%n, bufs[w])
		return err
	})
}

// TestConcurrent decides from many goroutines at once on a pool smaller than their number
// (run it with -race), and every answer must equal the one given sequentially.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	e, queries, want := drawnAnswers(t, 7, 3)
	inParallel(t, 16, 200, 31, len(queries), func(_, _, k int, buf []byte) ([]byte, error) {
		buf, err := e.DecideJSON(ctx, buf[:0], queries[k])
		if err != nil || !bytes.Equal(buf, want[k]) {
			return buf, errors.New("concurrent decision differs for " + string(queries[k]))
		}
		return buf, nil
	})
}

// TestCompilationCacheDir: a second engine on the same cache directory starts from the
// cache and decides the same.
func TestCompilationCacheDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	q := []byte(`{"op":"agent_id","args":{},"facts":{}}`)
	var outs [][]byte
	for range 2 {
		e, err := wasmengine.New(ctx, wasmengine.WithCompilationCacheDir(dir), wasmengine.WithPoolSize(1))
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.DecideJSON(ctx, nil, q)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) || !bytes.Contains(outs[0], []byte(`"code":"USAGE","fix":"","message":"usage: agent_id needs source`)) {
		t.Fatalf("decisions: %s / %s", outs[0], outs[1])
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the cache directory is empty: %v", err)
	}
}

// TestDecideJSONDoesNotAllocate: the bytes path allocates nothing once warm.
func TestDecideJSONDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	cat := nodiff.Scaled(10)
	e := newEngine(t, wasmengine.WithData(cat.Data), wasmengine.WithPoolSize(1))
	for _, sc := range append(nodiff.GateMix(), nodiff.Refresh()...) {
		buf := make([]byte, 0, 4096)
		if n := testing.AllocsPerRun(50, func() {
			if _, err := e.DecideJSON(ctx, buf[:0], sc.Query); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: DecideJSON allocates %v times", sc.Name, n)
		}
	}
}

// TestNoOPA: programs that use the Wasm engine, the native engine, the OPA-server engine,
// the module root or the OS shell link no package of OPA (`go list -deps`).
func TestNoOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	for _, pkg := range []string{
		"github.com/grantwire/grantwire/core/wasmengine",
		"github.com/grantwire/grantwire/core/nativeengine",
		"github.com/grantwire/grantwire/core/opaserver",
		"github.com/grantwire/grantwire",
		"github.com/grantwire/grantwire/shells/native",
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %s", pkg, len(deps), out)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/open-policy-agent/") {
				t.Errorf("%s links %s", pkg, d)
			}
		}
	}
}
