// Package rt is the runtime of policies compiled to Go by internal/nativegen: Rego
// values, their order and canonical JSON, the statements of OPA's IR as functions, the
// evaluation state (arena, memoisation, the engine-wide cache of input-independent rules)
// and the built-in functions. Generated code calls it; nothing else should.
//
// Semantics follow OPA's Go evaluator (topdown), which is grantwire's oracle: values are
// ordered as ast.Compare orders them (null < booleans < numbers < strings < arrays <
// objects < sets), objects and sets iterate in that order, numbers keep their JSON text
// and are computed on as topdown computes on them (ints in the int32 window, then exact
// big integers, then 64-bit-mantissa floats), and a built-in function that fails is
// undefined. Where OPA's IR leaves the meaning of a statement open (how a ScanStmt counts
// in BreakStmt indices, what CallDynamicStmt does with an undefined result), the runtime
// and the generator do what OPA's own Wasm compiler does with it.
//
// The built-in functions are OPA's that compute from their arguments only; those that read
// the world (http.send, rand.intn, net.lookup_ip_addr, a time zone database) are not
// implemented, and a policy calling them is refused when it is compiled. time.now_ns is the
// time the evaluation's caller sets (Eval.SetTime), as OPA's evaluator returns the time its
// caller gives the query: the runtime reads no clock. An error OPA's evaluator reports even
// with strict built-in errors off (a conflict, a halt) is an *Error carrying OPA's code and
// message. Besides grantwire's policy and the test policy of package irtest, OPA's own test
// cases check the runtime and the generator (`make opa-cases`, internal/tools/opacases).
//
// This package links no OPA package (TestNoOPA, of core/wasmengine and of package caserun).
package rt

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Kind is the type of a value, in OPA's sort order of types.
type Kind uint8

// The kinds of values. The zero Kind is never a value's.
const (
	KNull Kind = iota + 1
	KBool
	KNum
	KStr
	KArr
	KObj
	KSet
)

// V is a Rego value. A nil *V is undefined.
//
// Values built during an evaluation live in its arena and die with it; values held
// across evaluations (the data document, constants, the cache of input-independent
// rules) are immutable. Every V owns its slices: no two values share a backing array.
// The strings of a query's values point into the evaluation's copy of the query, which
// the next evaluation overwrites: whatever outlives an evaluation (a cache of compiled
// patterns) must copy them.
type V struct {
	a []*V   // array: elements; set: members, sorted; object: keys, sorted
	o []*V   // object: values, parallel to a
	s string // string; number: its text when it is not an int64 (n otherwise)
	n int64  // bool: 0 or 1; number: the value when s == ""
	k Kind
}

// Kind returns v's kind (0 for undefined).
func (v *V) Kind() Kind {
	if v == nil {
		return 0
	}
	return v.k
}

// Immutable singletons.
var (
	Null  = &V{k: KNull}
	True  = &V{k: KBool, n: 1}
	False = &V{k: KBool}
)

const (
	smallMin = -16
	smallMax = 1024
)

var smallInts = func() []V {
	out := make([]V, smallMax-smallMin+1)
	for i := range out {
		out[i] = V{k: KNum, n: int64(i + smallMin)}
	}
	return out
}()

// Bool returns the boolean b.
func Bool(b bool) *V {
	if b {
		return True
	}
	return False
}

// StrConst returns an immutable string (for constants).
func StrConst(s string) *V { return &V{k: KStr, s: s} }

// IntConst returns an immutable integer (for constants).
func IntConst(n int64) *V {
	if n >= smallMin && n <= smallMax {
		return &smallInts[n-smallMin]
	}
	return &V{k: KNum, n: n}
}

// NumConst returns an immutable number from its JSON text.
func NumConst(text string) *V {
	if n, ok := plainInt(text); ok {
		return IntConst(n)
	}
	return &V{k: KNum, s: text}
}

// plainInt parses text as an int64 when it is exactly the decimal form strconv would
// write (no sign but '-', no leading zero, no "-0"): the numbers whose text need not be
// kept.
func plainInt(text string) (int64, bool) {
	s := text
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && (len(s) > 1 || neg)) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// IsTrue reports whether v is the boolean true.
func IsTrue(v *V) bool { return v != nil && v.k == KBool && v.n != 0 }

// Str returns v's string and whether v is a string.
func Str(v *V) (string, bool) {
	if v == nil || v.k != KStr {
		return "", false
	}
	return v.s, true
}

// Len is the number of elements of an array, members of a set or object, or characters
// of a string.
func Len(v *V) int {
	switch v.Kind() {
	case KArr, KSet, KObj:
		return len(v.a)
	case KStr:
		return utf8.RuneCountInString(v.s)
	}
	return 0
}

// Compare orders two values as OPA's ast.Compare does (undefined first).
func Compare(a, b *V) int {
	if a == b {
		return 0
	}
	if a == nil {
		return -1
	}
	if b == nil {
		return 1
	}
	if a.k != b.k {
		if a.k < b.k {
			return -1
		}
		return 1
	}
	switch a.k {
	case KNull:
		return 0
	case KBool:
		return cmpInt(a.n, b.n)
	case KNum:
		return numCompare(a, b)
	case KStr:
		return strings.Compare(a.s, b.s)
	case KArr, KSet:
		n := min(len(a.a), len(b.a))
		for i := 0; i < n; i++ {
			if c := Compare(a.a[i], b.a[i]); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(a.a)), int64(len(b.a)))
	case KObj:
		n := min(len(a.a), len(b.a))
		for i := 0; i < n; i++ {
			if c := Compare(a.a[i], b.a[i]); c != 0 {
				return c
			}
			if c := Compare(a.o[i], b.o[i]); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(a.a)), int64(len(b.a)))
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Equal reports whether a and b are the same value (Compare == 0).
func Equal(a, b *V) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.k != b.k {
		return false
	}
	switch a.k {
	case KNull:
		return true
	case KBool:
		return a.n == b.n
	case KStr:
		return a.s == b.s
	case KNum:
		if a.s == "" && b.s == "" {
			return a.n == b.n
		}
		return numCompare(a, b) == 0
	case KArr, KSet:
		if len(a.a) != len(b.a) {
			return false
		}
		for i := range a.a {
			if !Equal(a.a[i], b.a[i]) {
				return false
			}
		}
		return true
	case KObj:
		if len(a.a) != len(b.a) {
			return false
		}
		for i := range a.a {
			if !Equal(a.a[i], b.a[i]) || !Equal(a.o[i], b.o[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// EqStr reports whether v is the string s.
func EqStr(v *V, s string) bool { return v != nil && v.k == KStr && v.s == s }

// EqBool reports whether v is the boolean b.
func EqBool(v *V, b bool) bool { return v != nil && v.k == KBool && (v.n != 0) == b }

// search finds k among the sorted xs: its index, or where it would go.
func search(xs []*V, k *V) (int, bool) {
	if k.k == KStr {
		return searchStr(xs, k.s)
	}
	return slices.BinarySearchFunc(xs, k, Compare)
}

// searchStr is search for a string, comparing kinds before texts.
func searchStr(xs []*V, key string) (int, bool) {
	lo, hi := 0, len(xs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		x := xs[m]
		var c int
		if x.k == KStr {
			c = strings.Compare(x.s, key)
		} else if x.k < KStr {
			c = -1
		} else {
			c = 1
		}
		switch {
		case c < 0:
			lo = m + 1
		case c > 0:
			hi = m
		default:
			return m, true
		}
	}
	return lo, false
}

// Get looks key up in an object ("" when missing).
func (v *V) get(key *V) *V {
	if i, ok := search(v.a, key); ok {
		return v.o[i]
	}
	return nil
}

// GetStr looks a string key up in an object (nil when v is not an object or lacks it).
func GetStr(v *V, key string) *V {
	if v == nil || v.k != KObj {
		return nil
	}
	if i, ok := searchStr(v.a, key); ok {
		return v.o[i]
	}
	return nil
}

// Dot is DotStmt: the value of key in an object, the element at an integer index of an
// array, the member equal to key of a set; undefined otherwise.
func Dot(src, key *V) *V {
	if src == nil || key == nil {
		return nil
	}
	switch src.k {
	case KObj:
		if key.k == KStr {
			return GetStr(src, key.s)
		}
		return src.get(key)
	case KArr:
		if key.k != KNum {
			return nil
		}
		i, ok := numInt64(key)
		if !ok || i < 0 || i >= int64(len(src.a)) {
			return nil
		}
		return src.a[i]
	case KSet:
		if i, ok := search(src.a, key); ok {
			return src.a[i]
		}
	}
	return nil
}

// ObjectInsert is ObjectInsertStmt: key gets value (replacing an equal key's).
func ObjectInsert(obj, key, val *V) {
	n := len(obj.a)
	if n == 0 || Compare(obj.a[n-1], key) < 0 {
		obj.a = append(obj.a, key)
		obj.o = append(obj.o, val)
		return
	}
	i, ok := search(obj.a, key)
	if ok {
		obj.o[i] = val
		return
	}
	obj.a = append(obj.a, nil)
	obj.o = append(obj.o, nil)
	copy(obj.a[i+1:], obj.a[i:])
	copy(obj.o[i+1:], obj.o[i:])
	obj.a[i], obj.o[i] = key, val
}

// ObjectInsertOnce is ObjectInsertOnceStmt: like ObjectInsert, but a different value
// for a key already present is a conflict.
func ObjectInsertOnce(obj, key, val *V, at string) {
	if i, ok := search(obj.a, key); ok {
		if !Equal(obj.o[i], val) {
			Fail(at, "object keys must be unique")
		}
		obj.o[i] = val
		return
	}
	ObjectInsert(obj, key, val)
}

// SetAdd is SetAddStmt.
func SetAdd(set, x *V) {
	n := len(set.a)
	if n == 0 || Compare(set.a[n-1], x) < 0 {
		set.a = append(set.a, x)
		return
	}
	i, ok := search(set.a, x)
	if ok {
		return
	}
	set.a = append(set.a, nil)
	copy(set.a[i+1:], set.a[i:])
	set.a[i] = x
}

// ArrayAppend is ArrayAppendStmt.
func ArrayAppend(arr, x *V) { arr.a = append(arr.a, x) }

// AssignOnce is the conflict check of AssignVarOnceStmt: target already holds a
// different value. rule names what conflicts, as OPA's evaluator names it ("rule data.a.b",
// "function data.a.f"; "" when the plan does not say).
func AssignOnce(target, src *V, at, rule string) *V {
	if target != nil && !Equal(target, src) {
		switch {
		case strings.HasPrefix(rule, "function "):
			Fail(at, rule+" produced conflicting values for the same inputs")
		case rule != "":
			Fail(at, rule+" produced conflicting values")
		default:
			Fail(at, "complete rules must not produce multiple outputs")
		}
	}
	return src
}

// IsArray, IsObject and IsSet are the type checks of the Is*Stmt statements.
func IsArray(v *V) bool  { return v != nil && v.k == KArr }
func IsObject(v *V) bool { return v != nil && v.k == KObj }
func IsSet(v *V) bool    { return v != nil && v.k == KSet }

// Merge is ObjectMergeStmt, as OPA's Wasm runtime merges: a when b is not an object or
// a is not one, b when a is undefined, else the union with values under common keys
// merged in turn.
func (ev *Eval) Merge(a, b *V) *V {
	if a == nil {
		return b
	}
	if a.k != KObj || b == nil || b.k != KObj {
		return a
	}
	out := ev.Object(len(a.a) + len(b.a))
	for i, k := range a.a {
		if other := b.get(k); other != nil {
			ObjectInsert(out, k, ev.Merge(a.o[i], other))
		} else {
			ObjectInsert(out, k, a.o[i])
		}
	}
	for i, k := range b.a {
		if a.get(k) == nil {
			ObjectInsert(out, k, b.o[i])
		}
	}
	return out
}

// Members returns an object's keys and values (an array's elements as keys, nil values),
// in order, for reading only: callers must not change them.
func Members(v *V) (keys, vals []*V) {
	switch v.Kind() {
	case KObj:
		return v.a, v.o
	case KArr:
		return v.a, nil
	}
	return nil, nil
}
