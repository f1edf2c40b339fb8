package rt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
)

// TestTimeAndRuntime: time.now_ns is the time the evaluation's caller set (the runtime
// reads no clock) and fails without one; opa.runtime is an empty object, as OPA's
// evaluator answers without runtime information.
func TestTimeAndRuntime(t *testing.T) {
	prog := rt.NewProgram(0, rt.Null)
	ev := prog.Get(context.Background())
	ev.SetTime(1700000000123456789)
	if got := string(rt.AppendCanonical(nil, ev.BiTimeNowNS())); got != "1700000000123456789" {
		t.Errorf("time.now_ns after SetTime: %s", got)
	}
	if got := string(rt.AppendCanonical(nil, ev.BiOPARuntime())); got != "{}" {
		t.Errorf("opa.runtime: %s", got)
	}
	prog.Put(ev)

	ev = prog.Get(context.Background()) // a new evaluation has no time
	defer prog.Put(ev)
	err := rt.Run(func() { ev.BiTimeNowNS() })
	var e *rt.Error
	if !errors.As(err, &e) || rt.ErrorCode(err) != rt.BuiltinError {
		t.Fatalf("time.now_ns without a time: %v (code %q), want a %s", err, rt.ErrorCode(err), rt.BuiltinError)
	}
}
