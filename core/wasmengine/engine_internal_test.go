package wasmengine

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestAbortReplacesInstance: after an abort the instance, whose shadow stack may be left
// unwound, is closed and replaced by a fresh clone of the loaded image.
func TestAbortReplacesInstance(t *testing.T) {
	ctx := context.Background()
	mod, err := os.ReadFile("testdata/abort.wasm")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, WithModule(mod), WithPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	v, err := e.variantFor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peek := func() *instance { in := <-v.pool; v.pool <- in; return in }
	before := peek()
	if _, err := e.DecideJSON(ctx, nil, []byte(`{"a":true}`)); err != nil {
		t.Fatal(err)
	}
	if peek() != before {
		t.Fatal("a successful decision replaced the instance")
	}
	var abort *AbortError
	if _, err := e.DecideJSON(ctx, nil, []byte(`{"a":true,"b":true}`)); !errors.As(err, &abort) {
		t.Fatalf("got %v, want an AbortError", err)
	}
	after := peek()
	if after == before {
		t.Fatal("the aborted instance is still in the pool")
	}
	if !before.mod.IsClosed() {
		t.Fatal("the aborted instance was not closed")
	}
}
