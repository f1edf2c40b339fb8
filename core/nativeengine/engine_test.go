package nativeengine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/internal/nodiff"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
)

func newEngine(t testing.TB, data []byte) *nativeengine.Engine {
	t.Helper()
	e, err := nativeengine.New(context.Background(), nativeengine.WithData(data))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func embeddedData(t testing.TB) []byte {
	t.Helper()
	c, err := catalog.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Data()
}

// The manifest is the policy's, as the wasm engine reads it from policy.wasm.
func TestManifest(t *testing.T) {
	ctx := context.Background()
	n := newEngine(t, embeddedData(t))
	w, err := wasmengine.New(ctx, wasmengine.WithData(embeddedData(t)), wasmengine.WithPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	if !reflect.DeepEqual(n.Manifest(), w.Manifest()) {
		t.Errorf("manifests differ:\n native %+v\n wasm   %+v", n.Manifest(), w.Manifest())
	}
	if n.Name() != "native" {
		t.Errorf("name %q", n.Name())
	}
	eps := nativeengine.Entrypoints()
	for _, want := range []string{nativeengine.DecideEntrypoint, nativeengine.ManifestEntrypoint} {
		if !slices.Contains(eps, want) {
			t.Errorf("no entrypoint %s in %v", want, eps)
		}
	}
	if len(nativeengine.Builtins()) < 10 {
		t.Errorf("builtins %v", nativeengine.Builtins())
	}
}

// Queries are checked at the engine boundary with the error every engine gives.
func TestMalformedQuery(t *testing.T) {
	e := newEngine(t, embeddedData(t))
	for _, q := range []string{``, `[]`, `{"op":1.5}`, "{\"op\":\"\xff\"}", `{"a":"\ud800"}`} {
		_, err := e.DecideJSON(context.Background(), nil, []byte(q))
		if !errors.Is(err, core.ErrMalformedQuery) {
			t.Errorf("%q: %v", q, err)
		}
		if want := core.CheckQuery([]byte(q)); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%q: error %v, want %v", q, err, want)
		}
	}
	if _, err := e.Eval(context.Background(), "grantwire/nothing", nil, []byte(`{}`)); err == nil {
		t.Error("an unknown entrypoint evaluated")
	}
}

func TestBadData(t *testing.T) {
	for _, d := range []string{``, `{`, `{"catalog":}`} {
		if _, err := nativeengine.New(context.Background(), nativeengine.WithData([]byte(d))); err == nil {
			t.Errorf("data %q accepted", d)
		}
	}
}

// A cancelled context stops a decision before it starts.
func TestCancelled(t *testing.T) {
	e := newEngine(t, embeddedData(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.DecideJSON(ctx, nil, nodiff.GateAllow().Query)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// Decisions from many goroutines are the decisions of one (run under -race by make test).
func TestConcurrent(t *testing.T) {
	size := nodiff.Sizes[0]
	e := newEngine(t, size.Catalog().Data)
	scs := append(append(nodiff.GateMix(), nodiff.Refresh()...), size.Listings()...)
	want := make([]string, len(scs))
	for i, sc := range scs {
		out, err := e.DecideJSON(context.Background(), nil, sc.Query)
		want[i] = fmt.Sprintf("%s %v", out, err)
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 50 {
				i := (g + r) % len(scs)
				out, err := e.DecideJSON(context.Background(), nil, scs[i].Query)
				if got := fmt.Sprintf("%s %v", out, err); got != want[i] {
					t.Errorf("%s: concurrent %s, alone %s", scs[i].Name, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A warm engine does not allocate on the gate's and the refresh plan's decisions: values
// and the strings the policy builds live in a reused arena, the rules that read only data
// are computed once per engine.
func TestNoAllocations(t *testing.T) {
	size := nodiff.Sizes[0]
	e := newEngine(t, size.Catalog().Data)
	buf := make([]byte, 0, 8192)
	for _, sc := range append(nodiff.GateMix(), nodiff.Refresh()...) {
		n := testing.AllocsPerRun(50, func() {
			if _, err := e.DecideJSON(context.Background(), buf[:0], sc.Query); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per decision", sc.Name, n)
		}
	}
}
