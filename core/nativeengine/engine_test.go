package nativeengine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
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
	e, eps := gateEpisodes(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.DecideJSON(ctx, nil, eps["allow"][0].Query)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// Decisions from many goroutines are the decisions of one (run under -race by make test):
// the gate's, the refresh plan's and the listings' questions, interleaved.
func TestConcurrent(t *testing.T) {
	e, gate := gateEpisodes(t)
	var eps []episode
	for _, name := range []string{"allow", "not-granted", "refresh"} {
		eps = append(eps, gate[name]...)
	}
	_, listings := listingEpisodes(t, 10, 10)
	for _, op := range []string{"status", "list_grants"} {
		eps = append(eps, listings[op]) // decided with another catalog: an error or a decision, always the same
	}
	want := make([]string, len(eps))
	for i, ep := range eps {
		out, err := e.DecideJSON(context.Background(), nil, ep.Query)
		want[i] = fmt.Sprintf("%s %v", out, err)
		if i < len(eps)-2 && want[i] != string(ep.Decision)+" <nil>" {
			t.Fatalf("%s: %s, captured %s", ep.Name, want[i], ep.Decision)
		}
	}
	testenv.InParallel(t, 16, 50, func(g, r int) error {
		i := (g + r) % len(eps)
		out, err := e.DecideJSON(context.Background(), nil, eps[i].Query)
		if got := fmt.Sprintf("%s %v", out, err); got != want[i] {
			return fmt.Errorf("%s: concurrent %s, alone %s", eps[i].Name, got, want[i])
		}
		return nil
	})
}

// A warm engine does not allocate on the gate's decisions (the cached token handed out,
// the refusal of an agent not granted) nor on the refresh plan's: values and the strings
// the policy builds live in a reused arena, the rules that read only data are computed
// once per engine. The questions are the host's own (captured on memhost, host ABI v2).
func TestNoAllocations(t *testing.T) {
	e, eps := gateEpisodes(t)
	buf := make([]byte, 0, 16384)
	for _, name := range []string{"allow", "not-granted", "refresh"} {
		for _, ep := range eps[name] {
			n := testing.AllocsPerRun(50, func() {
				if _, err := e.DecideJSON(context.Background(), buf[:0], ep.Query); err != nil {
					t.Fatal(err)
				}
			})
			if n != 0 {
				t.Errorf("%s (%s): %v allocations per decision", ep.Name, outcome(t, ep.Decision), n)
			}
		}
	}
}
