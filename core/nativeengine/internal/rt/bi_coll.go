package rt

import (
	"strconv"
	"strings"
)

//rego:builtin array.concat
func (ev *Eval) BiArrayConcat(a, b *V) *V {
	if a.Kind() != KArr || b.Kind() != KArr {
		return nil
	}
	if len(a.a) == 0 {
		return b
	}
	if len(b.a) == 0 {
		return a
	}
	out := ev.Array(len(a.a) + len(b.a))
	out.a = append(append(out.a, a.a...), b.a...)
	return out
}

//rego:builtin array.flatten
func (ev *Eval) BiArrayFlatten(a *V) *V {
	if a.Kind() != KArr {
		return nil
	}
	out := ev.Array(len(a.a))
	for _, x := range a.a {
		if x.k == KArr {
			out.a = append(out.a, x.a...)
		} else {
			out.a = append(out.a, x)
		}
	}
	return out
}

//rego:builtin array.reverse
func (ev *Eval) BiArrayReverse(a *V) *V {
	if a.Kind() != KArr {
		return nil
	}
	out := ev.Array(len(a.a))
	for i := len(a.a) - 1; i >= 0; i-- {
		out.a = append(out.a, a.a[i])
	}
	return out
}

//rego:builtin array.slice
func (ev *Eval) BiArraySlice(a, b, c *V) *V {
	start, ok1 := intOperand(b)
	stop, ok2 := intOperand(c)
	if a.Kind() != KArr || !ok1 || !ok2 {
		return nil
	}
	l := len(a.a)
	stop = max(0, min(stop, l))
	start = max(0, min(start, stop))
	if start == 0 && stop >= l {
		return a
	}
	out := ev.Array(stop - start)
	out.a = append(out.a, a.a[start:stop]...)
	return out
}

// setOf copies sorted, distinct members into a new set.
func (ev *Eval) setOf(xs []*V) *V {
	out := ev.Set(len(xs))
	out.a = append(out.a, xs...)
	return out
}

// intersect is ast's Set.Intersect: the members of the smaller set (a on a tie) that the
// other holds (which of two equal numbers, 1 and 1.0, is kept matters).
func (ev *Eval) intersect(a, b *V) *V {
	if len(b.a) < len(a.a) {
		a, b = b, a
	}
	out := ev.Set(len(a.a))
	for _, x := range a.a {
		if _, ok := search(b.a, x); ok {
			out.a = append(out.a, x)
		}
	}
	return out
}

//rego:builtin and
func (ev *Eval) BiAnd(a, b *V) *V { return ev.both(KSet, a, b, (*Eval).intersect) }

//rego:builtin or
func (ev *Eval) BiOr(a, b *V) *V { return ev.both(KSet, a, b, (*Eval).unionOf) }

//rego:builtin set_diff
func (ev *Eval) BiSetDiff(a, b *V) *V { return ev.both(KSet, a, b, (*Eval).minus) }

//rego:builtin intersection
func (ev *Eval) BiIntersection(a *V) *V { return ev.fold(KSet, KSet, a, (*Eval).intersect) }

//rego:builtin union
func (ev *Eval) BiUnion(a *V) *V { return ev.fold(KSet, KSet, a, (*Eval).unionOf) }

// both is a built-in function of two operands of kind k (sets, objects): f of them, or
// undefined when either is of another kind.
func (ev *Eval) both(k Kind, a, b *V, f func(*Eval, *V, *V) *V) *V {
	if a.Kind() != k || b.Kind() != k {
		return nil
	}
	return f(ev, a, b)
}

// fold is a built-in function over the members of a collection xs of kind outer (a set
// of sets, an array of objects), each of kind k: f folded over them, an empty k when
// there are none, undefined when xs or a member is of another kind.
func (ev *Eval) fold(outer, k Kind, xs *V, f func(*Eval, *V, *V) *V) *V {
	if xs.Kind() != outer {
		return nil
	}
	for _, x := range xs.a {
		if x.k != k {
			return nil
		}
	}
	if len(xs.a) == 0 {
		if k == KObj {
			return ev.Object(0)
		}
		return ev.Set(0)
	}
	r := xs.a[0]
	for _, x := range xs.a[1:] {
		r = f(ev, r, x)
	}
	return r
}

// unionOf is or and object.union of two sets or two objects: an empty or equal operand
// is the answer without a copy.
func (ev *Eval) unionOf(a, b *V) *V {
	if len(a.a) == 0 {
		return b
	}
	if len(b.a) == 0 || Equal(a, b) {
		return a
	}
	return ev.union(a, b)
}

//rego:builtin object.get
func (ev *Eval) BiObjectGet(obj, path, def *V) *V {
	if obj.Kind() != KObj || path == nil || def == nil {
		return nil
	}
	if path.k != KArr {
		if v := obj.get(path); v != nil {
			return v
		}
		return def
	}
	cur := obj
	for _, k := range path.a {
		if cur = Dot(cur, k); cur == nil {
			return def
		}
	}
	return cur
}

//rego:builtin object.keys
func (ev *Eval) BiObjectKeys(obj *V) *V {
	if obj.Kind() != KObj {
		return nil
	}
	return ev.setOf(obj.a)
}

// union is the union of two sets, or object.union of two objects (b's members over a's,
// objects under a common key merged): one walk of their sorted members (keys). Of a member
// in both, a's is kept (which of two equal numbers, 1 and 1.0, is kept matters).
func (ev *Eval) union(a, b *V) *V {
	obj := a.k == KObj
	var out *V
	if obj {
		out = ev.Object(len(a.a) + len(b.a))
	} else {
		out = ev.Set(len(a.a) + len(b.a))
	}
	i, j := 0, 0
	for i < len(a.a) || j < len(b.a) {
		var c int
		switch {
		case j >= len(b.a):
			c = -1
		case i >= len(a.a):
			c = 1
		default:
			c = Compare(a.a[i], b.a[j])
		}
		switch {
		case c < 0:
			out.a = append(out.a, a.a[i])
			if obj {
				out.o = append(out.o, a.o[i])
			}
			i++
		case c > 0:
			out.a = append(out.a, b.a[j])
			if obj {
				out.o = append(out.o, b.o[j])
			}
			j++
		default:
			out.a = append(out.a, a.a[i])
			if obj {
				va, vb := a.o[i], b.o[j]
				v := vb
				if va.k == KObj && vb.k == KObj {
					v = ev.union(va, vb)
				}
				out.o = append(out.o, v)
			}
			i++
			j++
		}
	}
	return out
}

//rego:builtin object.union
func (ev *Eval) BiObjectUnion(a, b *V) *V { return ev.both(KObj, a, b, (*Eval).unionOf) }

//rego:builtin object.union_n
func (ev *Eval) BiObjectUnionN(arr *V) *V { return ev.fold(KArr, KObj, arr, (*Eval).unionOf) }

// keySet is topdown's getObjectKeysParam: the keys given as an array, a set or an
// object's keys, as a sorted slice.
func (ev *Eval) keySet(a *V) ([]*V, bool) {
	switch a.Kind() {
	case KArr:
		s := ev.Set(len(a.a))
		for _, x := range a.a {
			SetAdd(s, x)
		}
		return s.a, true
	case KSet, KObj:
		return a.a, true
	}
	return nil, false
}

//rego:builtin object.remove
func (ev *Eval) BiObjectRemove(obj, keys *V) *V { return ev.selectKeys(obj, keys, false) }

//rego:builtin object.filter
func (ev *Eval) BiObjectFilter(obj, keys *V) *V { return ev.selectKeys(obj, keys, true) }

// selectKeys is object.filter (keep: the members under the keys, each under the key as
// given) and object.remove (the members under other keys).
func (ev *Eval) selectKeys(obj, keys *V, keep bool) *V {
	if obj.Kind() != KObj {
		return nil
	}
	ks, ok := ev.keySet(keys)
	if !ok {
		return nil
	}
	if keep {
		out := ev.Object(len(ks))
		for _, k := range ks {
			if v := obj.get(k); v != nil {
				out.a, out.o = append(out.a, k), append(out.o, v)
			}
		}
		return out
	}
	out := ev.Object(len(obj.a))
	for i, k := range obj.a {
		if _, found := search(ks, k); !found {
			out.a, out.o = append(out.a, k), append(out.o, obj.o[i])
		}
	}
	return out
}

//rego:builtin object.subset
func (ev *Eval) BiObjectSubset(super, sub *V) *V {
	if super == nil || sub == nil {
		return nil
	}
	switch {
	case super.k == KObj && sub.k == KObj:
		return Bool(objectSubset(super, sub))
	case super.k == KSet && sub.k == KSet:
		return Bool(setSubset(super, sub))
	case super.k == KArr && sub.k == KArr:
		return Bool(arraySubset(super, sub))
	case super.k == KArr && sub.k == KSet:
		unmatched := len(sub.a)
		for _, t := range super.a {
			if _, ok := search(sub.a, t); ok {
				unmatched--
			}
			if unmatched == 0 {
				return True
			}
		}
		return False
	}
	return nil
}

func objectSubset(super, sub *V) bool {
	for i, k := range sub.a {
		st, bt := super.get(k), sub.o[i]
		switch {
		case st == nil:
			return false
		case Equal(bt, st):
		case st.k == KObj && bt.k == KObj:
			if !objectSubset(st, bt) {
				return false
			}
		case st.k == KSet && bt.k == KSet:
			if !setSubset(st, bt) {
				return false
			}
		case st.k == KArr && bt.k == KArr:
			if !arraySubset(st, bt) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func setSubset(super, sub *V) bool {
	for _, x := range sub.a {
		if _, ok := search(super.a, x); !ok {
			return false
		}
	}
	return true
}

func arraySubset(super, sub *V) bool {
	if len(sub.a) > len(super.a) {
		return false
	}
	if Equal(sub, super) {
		return true
	}
	sc, bc := 0, 0
	for {
		if bc == len(sub.a) {
			return true
		}
		if sc+bc == len(super.a) {
			return false
		}
		if Equal(super.a[sc+bc], sub.a[bc]) {
			bc++
		} else {
			sc++
			bc = 0
		}
	}
}

// jsonPaths is topdown's getJSONPaths and pathsToObject: the paths of json.filter and
// json.remove as a tree of objects with null leaves.
func (ev *Eval) jsonPaths(a *V) (*V, bool) {
	var paths [][]*V
	switch a.Kind() {
	case KArr, KSet:
	default:
		return nil, false
	}
	for _, p := range a.a {
		switch p.k {
		case KStr:
			if p.s == "" {
				paths = append(paths, nil)
				continue
			}
			var segs []*V
			for _, part := range strings.Split(strings.TrimLeft(p.s, "/"), "/") {
				segs = append(segs, ev.String(strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")))
			}
			paths = append(paths, segs)
		case KArr:
			paths = append(paths, append([]*V(nil), p.a...))
		default:
			return nil, false
		}
	}
	root := ev.Object(len(paths))
	for _, path := range paths {
		if len(path) == 0 {
			continue
		}
		node, done := root, false
		for i := 0; i < len(path)-1 && !done; i++ {
			child := node.get(path[i])
			switch {
			case child == nil:
				o := ev.Object(0)
				ObjectInsert(node, path[i], o)
				node = o
			case child.k == KNull:
				done = true
			default:
				node = child
			}
		}
		if !done {
			ObjectInsert(node, path[len(path)-1], Null)
		}
	}
	return root, true
}

//rego:builtin json.filter
func (ev *Eval) BiJSONFilter(obj, paths *V) *V { return ev.onPaths(obj, paths, (*Eval).filterObject) }

// onPaths is json.filter and json.remove: f of an object and the tree of the paths
// (jsonPaths), undefined when obj is not an object or paths are not paths.
func (ev *Eval) onPaths(obj, paths *V, f func(*Eval, *V, *V) *V) *V {
	if obj.Kind() != KObj {
		return nil
	}
	tree, ok := ev.jsonPaths(paths)
	if !ok {
		return nil
	}
	return f(ev, obj, tree)
}

func (ev *Eval) filterObject(o, filter *V) *V {
	if filter.k == KNull {
		return o
	}
	if filter.k != KObj {
		Fail("", "invalid filter value, expected an object")
	}
	switch o.k {
	case KArr:
		out := ev.Array(0)
		for i, x := range o.a {
			if sub := GetStr(filter, strconv.Itoa(i)); sub != nil {
				out.a = append(out.a, ev.filterObject(x, sub))
			}
		}
		return out
	case KSet:
		out := ev.Set(0)
		for _, x := range o.a {
			if sub := filter.get(x); sub != nil {
				SetAdd(out, ev.filterObject(x, sub))
			}
		}
		return out
	case KObj:
		out := ev.Object(0)
		for i, k := range o.a {
			if sub := filter.get(k); sub != nil {
				ObjectInsert(out, k, ev.filterObject(o.o[i], sub))
			}
		}
		return out
	}
	return o
}

//rego:builtin json.remove
func (ev *Eval) BiJSONRemove(obj, paths *V) *V { return ev.onPaths(obj, paths, (*Eval).jsonRemove) }

func (ev *Eval) jsonRemove(a, b *V) *V {
	if b == nil {
		return a
	}
	switch b.k {
	case KObj:
	case KNull:
		return nil
	default:
		return a
	}
	switch a.k {
	case KObj:
		out := ev.Object(len(a.a))
		for i, k := range a.a {
			if d := ev.jsonRemove(a.o[i], b.get(k)); d != nil {
				ObjectInsert(out, k, d)
			}
		}
		return out
	case KSet:
		out := ev.Set(len(a.a))
		for _, x := range a.a {
			if d := ev.jsonRemove(x, b.get(x)); d != nil {
				SetAdd(out, d)
			}
		}
		return out
	case KArr:
		out := ev.Array(len(a.a))
		for i, x := range a.a {
			if d := ev.jsonRemove(x, GetStr(b, strconv.Itoa(i))); d != nil {
				out.a = append(out.a, d)
			}
		}
		return out
	}
	return a
}

//rego:builtin walk
func (ev *Eval) BiWalk(x *V) *V {
	if x == nil {
		return nil
	}
	out := ev.Array(0)
	ev.walk(out, nil, x)
	return out
}

func (ev *Eval) walk(out *V, path []*V, x *V) {
	p := ev.Array(len(path))
	p.a = append(p.a, path...)
	pair := ev.Array(2)
	pair.a = append(pair.a, p, x)
	out.a = append(out.a, pair)
	if len(out.a)&1023 == 1023 {
		ev.Check()
	}
	switch x.k {
	case KArr:
		for i, e := range x.a {
			ev.walk(out, append(path[:len(path):len(path)], ev.Int(int64(i))), e)
		}
	case KObj:
		for i, k := range x.a {
			ev.walk(out, append(path[:len(path):len(path)], k), x.o[i])
		}
	case KSet:
		for _, e := range x.a {
			ev.walk(out, append(path[:len(path):len(path)], e), e)
		}
	}
}

func vertices(v *V) []*V {
	switch v.Kind() {
	case KArr, KSet:
		return v.a
	}
	return nil
}

// graphOperands is the type check of graph.reachable and graph.reachable_paths: an
// object (a vertex's edges) and an array or set of vertices to start from.
func graphOperands(graph, initial *V) bool {
	k := initial.Kind()
	return graph.Kind() == KObj && (k == KArr || k == KSet)
}

//rego:builtin graph.reachable
func (ev *Eval) BiGraphReachable(graph, initial *V) *V {
	if !graphOperands(graph, initial) {
		return nil
	}
	queue := append([]*V(nil), initial.a...)
	reached := ev.Set(0)
	for len(queue) > 0 {
		node := queue[0]
		queue = queue[1:]
		if edges := graph.get(node); edges != nil {
			for _, n := range vertices(edges) {
				if _, ok := search(reached.a, n); !ok {
					queue = append(queue, n)
				}
			}
			SetAdd(reached, node)
		}
	}
	return reached
}

//rego:builtin graph.reachable_paths
func (ev *Eval) BiGraphReachablePaths(graph, initial *V) *V {
	if !graphOperands(graph, initial) {
		return nil
	}
	result := ev.Set(0)
	for _, node := range initial.a {
		edges := graph.get(node)
		if edges == nil {
			continue
		}
		if vs := vertices(edges); len(vs) > 0 {
			for _, n := range vs {
				ev.pathBuilder(graph, n, []*V{node}, result, []*V{node})
			}
		} else {
			p := ev.Array(1)
			p.a = append(p.a, node)
			SetAdd(result, p)
		}
	}
	return result
}

func (ev *Eval) pathBuilder(graph, root *V, path []*V, result *V, reached []*V) {
	add := func(p []*V) {
		a := ev.Array(len(p))
		a.a = append(a.a, p...)
		SetAdd(result, a)
	}
	edges := graph.get(root)
	if edges == nil {
		add(path)
		return
	}
	path = append(path, root)
	vs := vertices(edges)
	if len(vs) == 0 {
		add(path)
		return
	}
	r := ev.Set(len(reached) + 1)
	r.a = append(r.a, reached...)
	SetAdd(r, root)
	for _, n := range vs {
		if _, ok := search(r.a, n); ok {
			add(path)
		} else {
			ev.pathBuilder(graph, n, append([]*V(nil), path...), result, r.a)
		}
	}
}
