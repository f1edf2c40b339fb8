package rt

import (
	"strconv"
	"strings"
)

// json.patch applies RFC 6902 operations as OPA does: paths are JSON pointers (leading
// slashes dropped, ~1 and ~0 unescaped) or arrays of keys; a set's members are its keys;
// an array index is an integer, or "-" (one past the end) to add; a step through
// something that does not exist, an index out of bounds or a failed "test" make the
// result undefined, as does removing the whole document without adding one again. The document is never changed: every operation copies the values on
// its path.

// patchPath reads an operation's path or from.
func (ev *Eval) patchPath(p *V) ([]*V, bool) {
	switch p.Kind() {
	case KStr:
		if p.s == "" {
			return nil, true
		}
		var segs []*V
		for _, part := range strings.Split(strings.TrimLeft(p.s, "/"), "/") {
			segs = append(segs, ev.String(strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")))
		}
		return segs, true
	case KArr:
		return p.a, true
	}
	return nil, false
}

// patchIndex is an array index of a path (n: the array's length, what "-" means).
func patchIndex(n int, k *V) (int, bool) {
	switch k.k {
	case KNum:
		if k.s != "" {
			if _, ok := plainInt(k.s); !ok {
				return 0, false
			}
		}
		i, ok := numInt64(k)
		return int(i), ok && int64(int(i)) == i
	case KStr:
		if k.s == "-" {
			return n, true
		}
		if k.s != "0" && strings.HasPrefix(k.s, "0") {
			return 0, false
		}
		i, err := strconv.ParseInt(k.s, 10, 64)
		return int(i), err == nil && int64(int(i)) == i
	}
	return 0, false
}

// patchChild is the value under one key of a path.
func patchChild(doc, k *V) (*V, bool) {
	switch doc.Kind() {
	case KObj:
		v := doc.get(k)
		return v, v != nil
	case KSet:
		i, ok := search(doc.a, k)
		if !ok {
			return nil, false
		}
		return doc.a[i], true
	case KArr:
		i, ok := patchIndex(len(doc.a), k)
		if !ok || i < 0 || i >= len(doc.a) {
			return nil, false
		}
		return doc.a[i], true
	}
	return nil, false
}

func patchGet(doc *V, path []*V) (*V, bool) {
	for _, k := range path {
		var ok bool
		if doc, ok = patchChild(doc, k); !ok {
			return nil, false
		}
	}
	return doc, true
}

// patchEdit replaces the value at path by edit's result (at the last key, edit sees the
// container and the key).
func (ev *Eval) patchEdit(doc *V, path []*V, edit func(container, k *V) (*V, bool)) (*V, bool) {
	if len(path) == 1 {
		return edit(doc, path[0])
	}
	child, ok := patchChild(doc, path[0])
	if !ok {
		return nil, false
	}
	nc, ok := ev.patchEdit(child, path[1:], edit)
	if !ok {
		return nil, false
	}
	out := ev.shallow(doc)
	switch doc.k {
	case KObj:
		ObjectInsert(out, path[0], nc)
	case KArr:
		i, _ := patchIndex(len(doc.a), path[0])
		out.a[i] = nc
	case KSet:
		i, _ := search(out.a, child)
		out.a = append(out.a[:i], out.a[i+1:]...)
		SetAdd(out, nc)
	}
	return out, true
}

func (ev *Eval) patchAdd(doc *V, path []*V, value *V) (*V, bool) {
	if len(path) == 0 {
		return value, true
	}
	return ev.patchEdit(doc, path, func(c, k *V) (*V, bool) {
		switch c.Kind() {
		case KObj:
			out := ev.shallow(c)
			ObjectInsert(out, k, value)
			return out, true
		case KSet:
			if !Equal(k, value) {
				return nil, false
			}
			out := ev.shallow(c)
			SetAdd(out, value)
			return out, true
		case KArr:
			i, ok := patchIndex(len(c.a), k)
			if !ok || i < 0 || i > len(c.a) {
				return nil, false
			}
			out := ev.Array(len(c.a) + 1)
			out.a = append(append(append(out.a, c.a[:i]...), value), c.a[i:]...)
			return out, true
		}
		return nil, false
	})
}

func (ev *Eval) patchRemove(doc *V, path []*V) (*V, bool) {
	if len(path) == 0 {
		return nil, true // the document itself: only an "add" at "" can follow
	}
	return ev.patchEdit(doc, path, func(c, k *V) (*V, bool) {
		switch c.Kind() {
		case KObj:
			if c.get(k) == nil {
				return nil, false
			}
			out := ev.Object(len(c.a))
			for i, x := range c.a {
				if !Equal(x, k) {
					out.a, out.o = append(out.a, x), append(out.o, c.o[i])
				}
			}
			return out, true
		case KSet:
			i, ok := search(c.a, k)
			if !ok {
				return nil, false
			}
			out := ev.Set(len(c.a))
			out.a = append(append(out.a, c.a[:i]...), c.a[i+1:]...)
			return out, true
		case KArr:
			i, ok := patchIndex(len(c.a), k)
			if !ok || i < 0 || i >= len(c.a) {
				return nil, false
			}
			out := ev.Array(len(c.a))
			out.a = append(append(out.a, c.a[:i]...), c.a[i+1:]...)
			return out, true
		}
		return nil, false
	})
}

//rego:builtin json.patch
func (ev *Eval) BiJSONPatch(doc, ops *V) *V {
	if doc == nil || ops.Kind() != KArr {
		return nil
	}
	for _, op := range ops.a {
		if op.k != KObj {
			return nil
		}
		p, name := GetStr(op, "path"), GetStr(op, "op")
		if p == nil || name.Kind() != KStr {
			return nil
		}
		path, ok := ev.patchPath(p)
		if !ok {
			return nil
		}
		value := GetStr(op, "value")
		from := func() ([]*V, bool) {
			f := GetStr(op, "from")
			if f == nil {
				return nil, false
			}
			return ev.patchPath(f)
		}
		switch name.s {
		case "add":
			if value == nil {
				return nil
			}
			doc, ok = ev.patchAdd(doc, path, value)
		case "remove":
			doc, ok = ev.patchRemove(doc, path)
		case "replace":
			if doc, ok = ev.patchRemove(doc, path); ok && value != nil {
				doc, ok = ev.patchAdd(doc, path, value)
			} else {
				ok = false
			}
		case "move", "copy":
			var src []*V
			if src, ok = from(); !ok {
				return nil
			}
			var chunk *V
			if chunk, ok = patchGet(doc, src); !ok {
				return nil
			}
			if name.s == "move" {
				if doc, ok = ev.patchRemove(doc, src); !ok {
					return nil
				}
			}
			doc, ok = ev.patchAdd(doc, path, chunk)
		case "test":
			var chunk *V
			chunk, ok = patchGet(doc, path)
			ok = ok && value != nil && Equal(chunk, value)
		default:
			return nil
		}
		if !ok {
			return nil
		}
	}
	return doc
}
