package wasmengine

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestCancellationReplacesInstance: an instance wazero closed because its decision's
// context ended is closed for good; the pool gets a fresh clone in its place.
func TestCancellationReplacesInstance(t *testing.T) {
	mod, err := os.ReadFile("testdata/slow.wasm")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := New(ctx, WithModule(mod), WithPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	v, err := e.variantFor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peek := func() *instance { in := <-v.pool; v.pool <- in; return in }
	before := peek()
	dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer dcancel()
	if _, err := e.DecideJSON(dctx, nil, []byte(`{"n": 800}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	after := peek()
	if after == nil || after == before {
		t.Fatal("the closed instance is still in the pool")
	}
	if !before.mod.IsClosed() {
		t.Fatal("the interrupted instance was not closed")
	}
}
