package caserun

import (
	"github.com/grantwire/grantwire/core/nativeengine/internal/rt"
	"github.com/grantwire/grantwire/internal/caseproto"
)

// Untag rebuilds the sets and objects the harness tagged in v (caseproto.SetTag,
// caseproto.ObjectTag), in ev's arena.
func Untag(ev *rt.Eval, v *rt.V) *rt.V {
	switch v.Kind() {
	case rt.KArr:
		elems, _ := rt.Members(v)
		out := ev.Array(len(elems))
		for _, x := range elems {
			rt.ArrayAppend(out, Untag(ev, x))
		}
		return out
	case rt.KObj:
		keys, vals := rt.Members(v)
		if len(keys) == 1 {
			elems, _ := rt.Members(vals[0])
			switch k, _ := rt.Str(keys[0]); k {
			case caseproto.SetTag:
				out := ev.Set(len(elems))
				for _, x := range elems {
					rt.SetAdd(out, Untag(ev, x))
				}
				return out
			case caseproto.ObjectTag:
				out := ev.Object(len(elems))
				for _, pair := range elems {
					kv, _ := rt.Members(pair)
					rt.ObjectInsert(out, Untag(ev, kv[0]), Untag(ev, kv[1]))
				}
				return out
			}
		}
		out := ev.Object(len(keys))
		for i, k := range keys {
			rt.ObjectInsert(out, k, Untag(ev, vals[i]))
		}
		return out
	}
	return v
}
