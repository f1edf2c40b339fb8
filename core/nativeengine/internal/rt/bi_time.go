package rt

// SetTime sets the evaluation's time, nanoseconds since the Unix epoch: what time.now_ns
// returns, as OPA's evaluator returns the time its caller gives the query. The runtime
// reads no clock; an evaluation that calls time.now_ns without a time fails.
func (ev *Eval) SetTime(ns int64) {
	v := ev.node()
	v.k, v.n = KNum, ns
	ev.now = v
}

//rego:builtin time.now_ns
func (ev *Eval) BiTimeNowNS() *V {
	if ev.now == nil {
		failWith(BuiltinError, "time.now_ns: the evaluation has no time (its caller sets one with SetTime)")
	}
	return ev.now
}

//rego:builtin opa.runtime
func (ev *Eval) BiOPARuntime() *V {
	// The native engine gives policies no runtime information (no environment, no
	// configuration): OPA's evaluator without a runtime returns an empty object too.
	return ev.Object(0)
}
