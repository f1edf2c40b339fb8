package rt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Program is a compiled policy bound to its data document: what generated code needs
// beside its functions. It is safe for concurrent use.
type Program struct {
	Data    *V
	cache   []atomic.Pointer[cached]
	pool    sync.Pool
	noCache bool
}

type cached struct{ v *V }

// NewProgram binds a policy of nfuncs functions to its data document (parsed, immutable).
func NewProgram(nfuncs int, data *V) *Program {
	p := &Program{Data: data, cache: make([]atomic.Pointer[cached], nfuncs)}
	p.pool.New = func() any { return &Eval{prog: p, memo: make([]memoEntry, nfuncs)} }
	return p
}

// NewProgramNoCache is NewProgram without the engine-wide cache of input-independent
// rules: every evaluation computes every rule it needs, as OPA's evaluator does (what a
// benchmark compares).
func NewProgramNoCache(nfuncs int, data *V) *Program {
	p := NewProgram(nfuncs, data)
	p.noCache = true
	return p
}

// Eval is the state of one evaluation: the arena its values live in and the memo of
// its functions. Borrow one with Program.Get, return it with Put.
type Eval struct {
	prog  *Program
	heap  bool // allocate on the heap (values that outlive the evaluation)
	with  int  // depth of WithStmt blocks: the cache is off inside them
	gen   uint64
	gens  uint64
	memo  []memoEntry
	steps uint32 // ScanStmt iterations: the context is checked every 1024
	now   *V     // time.now_ns (SetTime); nil: the caller gave none
	done  <-chan struct{}
	ctx   context.Context

	chunks [][]V
	next   int
	buf    []byte   // the query's bytes, which its strings point into
	scr    []byte   // scratch
	text   [][]byte // the arena of the strings built by the evaluation
	textN  int      // the chunk being filled
}

type memoEntry struct {
	gen uint64
	v   *V
}

const chunkSize = 256

// Get borrows an evaluation state.
func (p *Program) Get(ctx context.Context) *Eval {
	ev := p.pool.Get().(*Eval)
	ev.gens++
	ev.gen = ev.gens
	ev.with = 0
	ev.next = 0
	for i := range ev.text[:min(ev.textN+1, len(ev.text))] {
		ev.text[i] = ev.text[i][:0]
	}
	ev.textN = 0
	ev.now = nil
	ev.ctx, ev.done = ctx, ctx.Done()
	return ev
}

// Put returns an evaluation state; its values must not be used any more.
func (p *Program) Put(ev *Eval) {
	ev.ctx, ev.done = nil, nil
	if len(ev.chunks) > 64 { // a huge evaluation: do not keep its arena
		ev.chunks = nil
	}
	if cap(ev.buf) > 1<<20 {
		ev.buf = nil
	}
	if len(ev.text) > 64 {
		ev.text = nil
	}
	p.pool.Put(ev)
}

// node allocates a value.
func (ev *Eval) node() *V {
	if ev.heap {
		return new(V)
	}
	c, i := ev.next/chunkSize, ev.next%chunkSize
	if c == len(ev.chunks) {
		ev.chunks = append(ev.chunks, make([]V, chunkSize))
	}
	ev.next++
	v := &ev.chunks[c][i]
	v.a, v.o, v.s = v.a[:0], v.o[:0], ""
	return v
}

const textChunk = 8 << 10

// textBytes returns n bytes of the string arena to write a string into; the string made
// of them lives as long as the evaluation (anything kept longer copies it).
func (ev *Eval) textBytes(n int) []byte {
	if ev.heap || n > textChunk/2 {
		return make([]byte, n)
	}
	for {
		if ev.textN == len(ev.text) {
			ev.text = append(ev.text, make([]byte, 0, textChunk))
		}
		c := ev.text[ev.textN]
		if len(c)+n <= cap(c) {
			ev.text[ev.textN] = c[:len(c)+n]
			return c[len(c) : len(c)+n : len(c)+n]
		}
		ev.textN++
	}
}

// stringOf returns a string value holding a copy of b (in the string arena).
func (ev *Eval) stringOf(b []byte) *V {
	t := ev.textBytes(len(b))
	copy(t, b)
	return ev.String(unsafe.String(unsafe.SliceData(t), len(t)))
}

// Int returns an integer.
func (ev *Eval) Int(n int64) *V {
	if n >= smallMin && n <= smallMax {
		return &smallInts[n-smallMin]
	}
	v := ev.node()
	v.k, v.n = KNum, n
	return v
}

// String returns a string.
func (ev *Eval) String(s string) *V {
	v := ev.node()
	v.k, v.s = KStr, s
	return v
}

// Array is MakeArrayStmt.
func (ev *Eval) Array(capacity int) *V { return ev.list(KArr, capacity) }

// Object is MakeObjectStmt.
func (ev *Eval) Object(capacity int) *V {
	v := ev.node()
	v.k = KObj
	if ev.heap && capacity > 0 {
		v.a, v.o = make([]*V, 0, capacity), make([]*V, 0, capacity)
	}
	return v
}

// list is an empty array or set (kind), with room for capacity members on the heap.
func (ev *Eval) list(kind Kind, capacity int) *V {
	v := ev.node()
	v.k = kind
	if ev.heap && capacity > 0 {
		v.a = make([]*V, 0, capacity)
	}
	return v
}

// Set is MakeSetStmt.
func (ev *Eval) Set(capacity int) *V { return ev.list(KSet, capacity) }

// Memo returns the memoised result of function fn in this evaluation (memoised are the
// functions of input and data only, as OPA's Wasm runtime memoises them).
func (ev *Eval) Memo(fn int) (*V, bool) {
	m := &ev.memo[fn]
	if m.gen == ev.gen {
		return m.v, true
	}
	return nil, false
}

// SetMemo records fn's result.
func (ev *Eval) SetMemo(fn int, v *V) *V {
	ev.memo[fn] = memoEntry{gen: ev.gen, v: v}
	return v
}

// Cached returns the engine-wide result of fn, a function that does not read the input
// (only data), computing it once on the heap when needed. ok is false inside WithStmt
// blocks (input or data may be replaced there) and while it is being computed.
func (ev *Eval) Cached(fn int, f func(*Eval, *V, *V) *V) (*V, bool) {
	if ev.with > 0 || ev.prog.noCache {
		return nil, false
	}
	if c := ev.prog.cache[fn].Load(); c != nil {
		return c.v, true
	}
	if ev.heap {
		return nil, false
	}
	h := &Eval{prog: ev.prog, heap: true, memo: make([]memoEntry, len(ev.memo)), ctx: ev.ctx, done: ev.done}
	h.gens, h.gen = 1, 1
	v := f(h, nil, ev.prog.Data)
	return v, true
}

// SetCached records the result of an input-independent function computed on the heap.
func (ev *Eval) SetCached(fn int, v *V) *V {
	if ev.heap && ev.with == 0 {
		ev.prog.cache[fn].Store(&cached{v: v})
	}
	return v
}

// PushWith and PopWith bracket a WithStmt's block: memoised results do not cross it.
func (ev *Eval) PushWith() uint64 {
	saved := ev.gen
	ev.gens++
	ev.gen = ev.gens
	ev.with++
	return saved
}

// PopWith restores the memo of the enclosing block.
func (ev *Eval) PopWith(saved uint64) {
	ev.gen = saved
	ev.with--
}

// Upsert is the mutation of a WithStmt with a path: a copy of root (an empty object when
// undefined) with value at path, copying every object on the way and replacing what is
// not one.
func (ev *Eval) Upsert(root *V, path []*V, value *V) *V {
	var top *V
	if root != nil {
		top = ev.shallow(root)
	} else {
		top = ev.Object(0)
	}
	cur := top
	for i, k := range path[:len(path)-1] {
		next := Dot(cur, k)
		if next == nil || next.k != KObj {
			// the rest of the path is made of new objects
			for _, k2 := range path[i : len(path)-1] {
				o := ev.Object(0)
				objectSet(cur, k2, o)
				cur = o
			}
			objectSet(cur, path[len(path)-1], value)
			return top
		}
		next = ev.shallow(next)
		objectSet(cur, k, next)
		cur = next
	}
	objectSet(cur, path[len(path)-1], value)
	return top
}

// objectSet inserts into an object (OPA's Wasm runtime does nothing for other kinds).
func objectSet(obj, k, v *V) {
	if obj.k == KObj {
		ObjectInsert(obj, k, v)
	}
}

func (ev *Eval) shallow(v *V) *V {
	switch v.k {
	case KArr, KSet, KObj:
		c := ev.node()
		c.k = v.k
		c.a = append(c.a, v.a...)
		c.o = append(c.o, v.o...)
		return c
	}
	return v
}

// ScanAt is ScanStmt's iteration: the i-th key and value of src (nil when done or when
// src is not a collection).
func (ev *Eval) ScanAt(src *V, i int) (*V, *V) {
	if src == nil {
		return nil, nil
	}
	// every 1024 iterations of all the evaluation's loops, nested small ones too
	if ev.steps++; ev.steps&1023 == 0 {
		ev.Check()
	}
	switch src.k {
	case KArr:
		if i < len(src.a) {
			return ev.Int(int64(i)), src.a[i]
		}
	case KObj:
		if i < len(src.a) {
			return src.a[i], src.o[i]
		}
	case KSet:
		if i < len(src.a) {
			return src.a[i], src.a[i]
		}
	}
	return nil, nil
}

// Check aborts the evaluation when its context is done.
func (ev *Eval) Check() {
	if ev.done == nil {
		return
	}
	select {
	case <-ev.done:
		panic(&Error{Err: ev.ctx.Err()})
	default:
	}
}

// Length is LenStmt.
func (ev *Eval) Length(v *V) *V { return ev.Int(int64(Len(v))) }

// Error is a failed evaluation: an error the policy ran into (Code, Msg, At: a conflict,
// or a built-in function's error that OPA's evaluator reports even with strict built-in
// errors off), a cancelled context (Err), or a bug (Err).
type Error struct {
	At   string // policy file:row
	Code string // OPA's error code: ConflictError, BuiltinError, InternalError
	Msg  string
	Err  error
}

// OPA's codes of the errors an evaluation reports.
const (
	ConflictError = "eval_conflict_error"
	BuiltinError  = "eval_builtin_error"
	InternalError = "eval_internal_error"
)

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	if e.At == "" {
		return e.Code + ": " + e.Msg
	}
	return e.At + ": " + e.Code + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the OPA error code of an evaluation's error ("" for a cancelled
// context, a bug, or an error that is not the evaluation's).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Err == nil {
		return e.Code
	}
	return ""
}

// Fail aborts the evaluation with a conflict.
func Fail(at, msg string) { panic(&Error{At: at, Code: ConflictError, Msg: msg}) }

// failWith aborts the evaluation with an error of a built-in function that OPA's evaluator
// does not turn into undefined (a halt error).
func failWith(code, msg string) { panic(&Error{Code: code, Msg: msg}) }

// Run calls f, turning a panic of the evaluation into an error.
func Run(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch x := r.(type) {
			case *Error:
				err = x
			case runtime.Error:
				err = &Error{Err: fmt.Errorf("internal error: %w", x)}
			default:
				err = &Error{Err: fmt.Errorf("internal error: %v", x)}
			}
		}
	}()
	f()
	return nil
}

// ErrDynamicCall reports a CallDynamicStmt whose path names no function.
var ErrDynamicCall = errors.New("no function at the path of a dynamic call")

// ResultSetAdd is ResultSetAddStmt.
func ResultSetAdd(rs, v *V) { SetAdd(rs, v) }
