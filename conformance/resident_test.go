package conformance_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/memshell"
)

// residentCheck is the Wasm engine deciding every typed query twice: with every fact
// named by a synthetic version token (a hash of its bytes, as a host's tokens behave) on
// the resident-facts path, and without tokens through JSON. It answers the resident
// decision and records every query where the two differ.
type residentCheck struct {
	*wasmengine.Engine
	mu       sync.Mutex
	queries  int
	mismatch []string
}

func (r *residentCheck) Decide(ctx context.Context, q *core.Query) (*core.Decision, error) {
	tq := *q
	tq.Tokens = make(map[string]string, len(q.Facts))
	for k, v := range q.Facts {
		h := sha256.Sum256(v)
		tq.Tokens[k] = hex.EncodeToString(h[:8])
	}
	tq.Facts = maps.Clone(q.Facts)
	got, gerr := r.Engine.Decide(ctx, &tq)
	want, werr := core.DecideTyped(ctx, r.Engine, q)
	if ctx.Err() == nil {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		r.mu.Lock()
		r.queries++
		if string(g) != string(w) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			in, _ := json.Marshal(q)
			r.mismatch = append(r.mismatch, fmt.Sprintf("query %s\n resident: %s (err %v)\n JSON:     %s (err %v)", in, g, gerr, w, werr))
		}
		r.mu.Unlock()
	}
	return got, gerr
}

// TestWasmResidentFacts runs the corpus on the memory host with the Wasm engine deciding
// on resident facts, and demands that every query of every scenario is decided exactly
// as without them.
func TestWasmResidentFacts(t *testing.T) {
	var mu sync.Mutex
	var checks []*residentCheck
	shell := memshell.New("wasm", func(ctx context.Context, data []byte) (core.Engine, error) {
		e, err := wasmengine.New(ctx, wasmengine.WithData(data), wasmengine.WithPoolSize(1))
		if err != nil {
			return nil, err
		}
		c := &residentCheck{Engine: e}
		mu.Lock()
		checks = append(checks, c)
		mu.Unlock()
		return c, nil
	})
	conformance.Run(t, shell)
	queries := 0
	for _, c := range checks {
		queries += c.queries
		for i, m := range c.mismatch {
			if i < 3 {
				t.Error(m)
			}
		}
		if len(c.mismatch) > 0 {
			t.Errorf("%d of %d queries decided differently on resident facts", len(c.mismatch), c.queries)
		}
	}
	if queries == 0 {
		t.Fatal("no query reached the engine")
	}
	t.Logf("%d queries decided the same with and without resident facts", queries)
}
