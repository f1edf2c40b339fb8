package wasmengine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/internal/testworld/testenv"
)

// slowQuery is a query of testdata/slow whose decision takes about 10 s on wazero's
// compiler (a minute on its interpreter): far longer than any test waits.
var slowQuery = []byte(`{"n": 800}`)

// A decision stops when its context ends (deadline or cancel), on the compiler and on the
// interpreter, and the engine (its only instance replaced) answers the next query.
// Issue 10, item 17.
func TestCancellationStopsASlowDecision(t *testing.T) {
	for _, interp := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpreter=%v", interp), func(t *testing.T) {
			opts := []wasmengine.Option{wasmengine.WithModule(testModule(t, "slow")), wasmengine.WithPoolSize(1)}
			if interp {
				opts = append(opts, wasmengine.WithInterpreter())
			}
			e := newEngine(t, opts...)
			var err error

			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			testenv.Within(t, 5*time.Second, "the decision cancelled", func() {
				_, err = e.DecideJSON(ctx, nil, slowQuery)
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("deadline: got %v, want an error wrapping context.DeadlineExceeded", err)
			}

			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			testenv.Within(t, 5*time.Second, "the decision cancelled", func() {
				_, err = e.DecideJSON(ctx, nil, slowQuery)
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancel: got %v, want an error wrapping context.Canceled", err)
			}

			// Already cancelled: nothing runs.
			if _, err = e.DecideJSON(ctx, nil, []byte(`{"n": 3}`)); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled before: %v", err)
			}

			// The engine goes on, with a cancellable context and without one.
			live, stop := context.WithCancel(context.Background())
			defer stop()
			for _, c := range []context.Context{live, context.Background()} {
				out, err := e.DecideJSON(c, nil, []byte(`{"n": 3}`))
				if err != nil || string(out) != `{"effects":[],"result":6,"status":"done"}` {
					t.Fatalf("after the cancellation: %s, %v", out, err)
				}
			}
		})
	}
}

// Cancellations in the middle of concurrent decisions on a small pool (run with -race):
// every decision that is not cancelled gives the answer it gives alone, and every
// cancelled one reports its context's error.
func TestConcurrentCancellation(t *testing.T) {
	ctx := context.Background()
	e, queries, want := drawnAnswers(t, 11, 1)
	inParallel(t, 12, 60, 17, len(queries), func(w, i, k int, buf []byte) ([]byte, error) {
		c, cancel := context.WithCancel(ctx)
		if (w+i)%3 == 0 {
			cancel() // cancelled before or while deciding
		}
		buf, err := e.DecideJSON(c, buf[:0], queries[k])
		cancel()
		switch {
		case err == nil && !bytes.Equal(buf, want[k]):
			return buf, fmt.Errorf("decision differs for %s", queries[k])
		case err != nil && !errors.Is(err, context.Canceled):
			return buf, fmt.Errorf("%s: %v", queries[k], err)
		}
		return buf, nil
	})
}
