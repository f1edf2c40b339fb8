// Package wasmengine runs grantwire's policy as WebAssembly: the policy.wasm that OPA
// compiles from policy/, executed by wazero (compiler mode where available) through OPA's
// Wasm ABI, implemented here from OPA's ABI documentation.
//
// It is the default engine: tens of microseconds a decision (BENCHMARKS.md), no
// allocation on the bytes path, sandboxed, and able to load a different (audited)
// policy.wasm at run time.
//
// # Cancellation
//
// A decision stops when its context ends: wazero closes the instance (the runtime is
// configured WithCloseOnContextDone), DecideJSON returns an error wrapping ctx.Err(), and
// the closed instance is replaced in its pool by a fresh clone of the loaded image. wazero
// pays for this on every evaluation (native code leaves for Go at every loop header to
// check, and each call starts a goroutine: several times the time of a decision, and
// three allocations; BENCHMARKS.md), so the engine keeps two variants of the compiled
// policy, each on its own runtime with its own pool: decisions whose context can end
// (ctx.Done() != nil) run on the checked variant; decisions whose context cannot
// (context.Background, context.WithoutCancel) run on the plain one, which allocates
// nothing. New builds the variant its own context calls for, the other is built on first
// use (a second compilation, from the cache when one is configured).
//
// # Resident facts
//
// Decide (the typed path) keeps the facts a query names by version token (core.Query.Tokens)
// parsed in the instance's heap between evaluations, the way the data document is: a fact
// is parsed with opa_json_parse the first time an instance sees its token, above the data,
// and the heap mark is moved above it. Each query then parses only its operation, its
// arguments and its untokened facts, inserts the resident values under input.facts with
// opa_value_add_path, and evaluates through the eval-context ABI (opa_eval_ctx_*, eval);
// opa_eval, which parses the whole input, serves DecideJSON, which ignores tokens. Values
// are kept by token, not by key: a key whose token changes gets the value of its new
// token, and the same value serves every key that carries its token (a fact read for one
// provider and then another under the same key keeps both resident instead of thrashing).
//
// Bound: each instance spends at most DefaultResidentLimit (64 MiB; WithResidentLimit) of
// heap on resident values, dead versions included. Before parsing new facts whose
// estimated size (16 bytes of heap per byte of JSON) would pass the bound, the instance
// drops every resident value and resets its heap to the data mark, then parses what the
// query needs: the bound holds unless one query's tokened facts alone exceed it.
// DecideJSON, which parses its whole query above the resident values, drops them first
// when the two together would pass the bound. An
// instance's linear memory (which never shrinks) is thus at most the data image, the bound
// and the heap of the largest decision it made; Stats reports it. An instance that
// aborts or is interrupted is replaced as above and its resident values go with it.
//
// A tokened fact is checked by core.CheckQuery's rules, as it sits in a query, the first
// time an instance parses it. A query the resident path could not answer exactly as
// DecideJSON does (a refused fact or argument, a key in invalid UTF-8, a query at the
// size limit) is decided through JSON, so its error is DecideJSON's to the byte.
//
// This package must not import any github.com/open-policy-agent/opa package; a test
// checks it with `go list -deps`.
//
// See https://www.openpolicyagent.org/docs/wasm
package wasmengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/jsonx"
	"github.com/grantwire/grantwire/policy"
)

// Entrypoints every grantwire policy module must export.
const (
	DecideEntrypoint   = "grantwire/decide"
	ManifestEntrypoint = "grantwire/manifest"
)

const (
	pageSize      = 65536
	headroomPages = 16   // 1 MiB past the data, so the first evaluations never grow memory
	maxPages      = 4096 // 256 MiB per instance: a guard, far above any real decision
)

// ErrNotPolicy reports a module that is not a grantwire policy (wrong ABI, missing
// exports or entrypoints, or host builtins grantwire does not provide).
var ErrNotPolicy = errors.New("wasmengine: not a grantwire policy module")

// AbortError is returned when the policy aborted (a policy bug such as a conflict).
type AbortError struct{ Message string }

func (e *AbortError) Error() string { return "wasmengine: policy aborted: " + e.Message }

type config struct {
	module   []byte
	data     []byte
	cache    wazero.CompilationCache
	pool     int
	interp   bool
	runtime  wazero.RuntimeConfig
	dataSet  bool
	errs     []error
	poolSet  bool
	cacheSet bool
	cacheDir string
	resident int // bytes of resident facts per instance (0: tokens ignored)
}

// Option configures an [Engine]; options never fail, errors are reported by [New].
type Option func(*config)

// WithModule runs the given policy.wasm instead of the embedded one.
func WithModule(wasm []byte) Option { return func(c *config) { c.module = wasm } }

// WithData sets the policy's data document (the catalog), as JSON.
func WithData(data []byte) Option {
	return func(c *config) { c.data = data; c.dataSet = true }
}

// WithCompilationCache shares compiled code between engines (and, with a directory cache,
// between processes), which cuts start-up from tens of milliseconds to a few.
func WithCompilationCache(cache wazero.CompilationCache) Option {
	return func(c *config) { c.cache = cache; c.cacheSet = true }
}

// WithCompilationCacheDir keeps the compiled policy in dir (created if missing) so that
// the next process starts without compiling it: New takes a few milliseconds instead of
// tens. wazero keys the cache by its version, the CPU features and the module's bytes.
// The engine closes the cache it opens; WithCompilationCache takes precedence.
func WithCompilationCacheDir(dir string) Option {
	return func(c *config) { c.cacheDir = dir }
}

// WithPoolSize sets how many instances evaluate in parallel (default GOMAXPROCS).
func WithPoolSize(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs = append(c.errs, fmt.Errorf("wasmengine: pool size %d < 1", n))
		}
		c.pool = n
		c.poolSet = true
	}
}

// WithResidentLimit bounds the heap bytes each instance spends on resident facts (see
// Resident facts; default DefaultResidentLimit). 0 turns resident facts off: Decide
// then ignores Query.Tokens.
func WithResidentLimit(bytes int) Option {
	return func(c *config) {
		if bytes < 0 {
			c.errs = append(c.errs, fmt.Errorf("wasmengine: resident limit %d < 0", bytes))
		}
		c.resident = bytes
	}
}

// WithInterpreter selects wazero's interpreter instead of its compiler (slower; for
// platforms without the compiler and for tests).
func WithInterpreter() Option { return func(c *config) { c.interp = true } }

// Engine is the Wasm engine. It is safe for concurrent use: each evaluation borrows one
// instance from a fixed pool of the variant its context calls for.
type Engine struct {
	cfg   config
	cache wazero.CompilationCache // opened by WithCompilationCacheDir, closed with the engine

	// variants[plain] evaluates without termination checks (contexts that cannot end),
	// variants[checked] with them (WithCloseOnContextDone). New builds the one its context
	// calls for; the other is built on first use, under once.
	variants [2]*variant
	once     [2]sync.Once
	errs     [2]error
	mu       sync.Mutex // orders Close after the building of a variant
	closed   bool

	image    []byte // linear memory after the data was parsed: cloned into every instance
	pages    uint32
	dataAddr uint32
	dataHeap uint32
	decideEP uint64
	manifest *core.Manifest
}

// Variants of the compiled policy.
const (
	plain   = 0 // no termination checks: for contexts whose Done() is nil
	checked = 1 // wazero's WithCloseOnContextDone: for contexts that can end
)

// variantOf is the variant a context calls for.
func variantOf(ctx context.Context) int {
	if ctx.Done() == nil {
		return plain
	}
	return checked
}

// variant is the policy compiled on one wazero runtime, with its pool of instances. A nil
// in the pool stands for an instance that could not be replaced; it is made on next use.
type variant struct {
	rt     wazero.Runtime
	policy wazero.CompiledModule
	glue   wazero.CompiledModule
	pool   chan *instance
}

type instance struct {
	glue, mod api.Module
	mem       api.Memory
	eval      api.Function
	malloc    api.Function
	free      api.Function
	parse     api.Function
	dump      api.Function
	heapGet   api.Function
	heapSet   api.Function
	stash     api.Function
	entries   api.Function
	builtins  api.Function
	stack     [8]uint64
	sorter    jsonx.Sorter

	// The eval-context ABI and opa_value_add_path, for resident facts (nil when the
	// module lacks them: Decide then goes through JSON).
	ctxNew, ctxInput, ctxData, ctxEntry, ctxEval, ctxResult, addPath api.Function
	res                                                              resident
}

// New compiles the policy and prepares a pool of instances with the data loaded once, on
// the variant ctx calls for (see Cancellation).
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	c := config{module: policy.Wasm, data: []byte(`{}`), pool: runtime.GOMAXPROCS(0), resident: DefaultResidentLimit}
	for _, o := range opts {
		o(&c)
	}
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	if !json.Valid(c.data) {
		return nil, errors.New("wasmengine: data is not valid JSON")
	}
	e := &Engine{}
	if c.cache == nil && c.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(c.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasmengine: compilation cache: %w", err)
		}
		c.cache, e.cache = cache, cache
	}
	e.cfg = c
	k := variantOf(ctx)
	e.once[k].Do(func() {}) // built here, not on first use
	v, err := e.compile(ctx, k)
	e.variants[k] = v
	if err == nil {
		err = e.init(ctx, v, c.data)
	}
	if err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// compile makes a runtime for variant k, compiles the policy and the glue module on it and
// instantiates the host module. It returns the variant with any error, for Close.
func (e *Engine) compile(ctx context.Context, k int) (*variant, error) {
	c := &e.cfg
	rc := wazero.NewRuntimeConfig()
	if c.interp {
		rc = wazero.NewRuntimeConfigInterpreter()
	}
	rc = rc.WithMemoryLimitPages(maxPages).WithCloseOnContextDone(k == checked)
	if c.cache != nil {
		rc = rc.WithCompilationCache(c.cache)
	}
	v := &variant{rt: wazero.NewRuntimeWithConfig(ctx, rc), pool: make(chan *instance, c.pool)}
	var err error
	if v.policy, err = v.rt.CompileModule(ctx, c.module); err != nil {
		return v, fmt.Errorf("%w: %v", ErrNotPolicy, err)
	}
	mems := v.policy.ImportedMemories()
	if len(mems) != 1 {
		return v, fmt.Errorf("%w: imports %d memories, want 1", ErrNotPolicy, len(mems))
	}
	if mod, nm, _ := mems[0].Import(); mod != "env" || nm != "memory" {
		return v, fmt.Errorf("%w: memory imported as %s.%s, want env.memory", ErrNotPolicy, mod, nm)
	}
	for _, f := range v.policy.ImportedFunctions() {
		if mod, _, _ := f.Import(); mod != "env" {
			return v, fmt.Errorf("%w: imports from module %q", ErrNotPolicy, mod)
		}
	}
	max, hasMax := mems[0].Max()
	if v.glue, err = v.rt.CompileModule(ctx, glueModule(mems[0].Min(), max, hasMax)); err != nil {
		return v, fmt.Errorf("wasmengine: glue module: %w", err)
	}
	hb := v.rt.NewHostModuleBuilder(hostModule)
	i32 := api.ValueTypeI32
	for _, f := range hostFuncs {
		params := make([]api.ValueType, f.params)
		for i := range params {
			params[i] = i32
		}
		results := make([]api.ValueType, f.results)
		for i := range results {
			results[i] = i32
		}
		var fn api.GoModuleFunc
		switch f.name {
		case "opa_abort":
			fn = hostAbort
		case "opa_println":
			fn = func(context.Context, api.Module, []uint64) {}
		default:
			fn = hostBuiltin
		}
		hb.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(f.name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		return v, fmt.Errorf("wasmengine: host module: %w", err)
	}
	return v, nil
}

// init loads the data into the first instance of v, evaluates the manifest and fills v's
// pool with clones of the loaded image.
func (e *Engine) init(ctx context.Context, v *variant, data []byte) error {
	first, err := v.newInstance(ctx)
	if err != nil {
		return err
	}
	if err := e.load(ctx, first, data); err != nil {
		_ = first.close(ctx)
		return err
	}
	v.pool <- first
	for i := 1; i < e.cfg.pool; i++ {
		in, err := e.clone(ctx, v)
		if err != nil {
			return err // New closes the engine
		}
		v.pool <- in
	}
	return nil
}

// variantFor returns the variant ctx calls for, building it on first use: the policy is
// compiled on a second runtime and its pool filled with clones of the loaded image.
func (e *Engine) variantFor(ctx context.Context) (*variant, error) {
	k := variantOf(ctx)
	e.once[k].Do(func() {
		bctx := context.WithoutCancel(ctx)
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed {
			e.errs[k] = errors.New("wasmengine: the engine is closed")
			return
		}
		v, err := e.compile(bctx, k)
		for i := 0; err == nil && i < e.cfg.pool; i++ {
			var in *instance
			if in, err = e.clone(bctx, v); err == nil {
				v.pool <- in
			}
		}
		if err != nil {
			_ = closeVariant(bctx, v)
			e.errs[k] = err
			return
		}
		e.variants[k] = v
	})
	if e.errs[k] != nil {
		return nil, e.errs[k]
	}
	return e.variants[k], nil
}

// hostAbort is OPA's opa_abort(addr): the policy hit an unrecoverable error.
func hostAbort(_ context.Context, m api.Module, stack []uint64) {
	msg := "unknown"
	if mem := m.Memory(); mem != nil {
		if b, ok := mem.Read(uint32(stack[0]), mem.Size()-uint32(stack[0])); ok {
			if i := bytes.IndexByte(b, 0); i >= 0 {
				msg = string(b[:i])
			}
		}
	}
	panic(&AbortError{Message: msg})
}

// hostBuiltin answers opa_builtinN. grantwire's policy is compiled against capabilities
// that contain only builtins implemented inside the Wasm module, and New refuses modules
// that list any host builtin, so this is never reached by a valid module.
func hostBuiltin(context.Context, api.Module, []uint64) {
	panic(&AbortError{Message: "host builtins are not provided by grantwire"})
}

func (v *variant) newInstance(ctx context.Context) (*instance, error) {
	anon := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	glue, err := v.rt.InstantiateModule(ctx, v.glue, anon)
	if err != nil {
		return nil, fmt.Errorf("wasmengine: instantiate glue: %w", err)
	}
	rctx := experimental.WithImportResolver(ctx, func(name string) api.Module {
		if name == "env" {
			return glue
		}
		return nil
	})
	mod, err := v.rt.InstantiateModule(rctx, v.policy, anon)
	if err != nil {
		_ = glue.Close(ctx)
		return nil, fmt.Errorf("%w: instantiate: %v", ErrNotPolicy, err)
	}
	in := &instance{glue: glue, mod: mod, mem: glue.Memory()}
	fns := map[string]*api.Function{
		"opa_eval": &in.eval, "opa_malloc": &in.malloc, "opa_free": &in.free,
		"opa_json_parse": &in.parse, "opa_json_dump": &in.dump,
		"opa_heap_ptr_get": &in.heapGet, "opa_heap_ptr_set": &in.heapSet,
		"opa_heap_blocks_stash": &in.stash, "entrypoints": &in.entries, "builtins": &in.builtins,
	}
	for n, p := range fns {
		if *p = mod.ExportedFunction(n); *p == nil {
			_ = in.close(ctx)
			return nil, fmt.Errorf("%w: missing export %s (OPA Wasm ABI 1.2 or later is required)", ErrNotPolicy, n)
		}
	}
	opt := map[string]*api.Function{
		"opa_eval_ctx_new": &in.ctxNew, "opa_eval_ctx_set_input": &in.ctxInput,
		"opa_eval_ctx_set_data": &in.ctxData, "opa_eval_ctx_set_entrypoint": &in.ctxEntry,
		"eval": &in.ctxEval, "opa_eval_ctx_get_result": &in.ctxResult, "opa_value_add_path": &in.addPath,
	}
	for n, p := range opt {
		*p = mod.ExportedFunction(n)
	}
	if g := mod.ExportedGlobal("opa_wasm_abi_version"); g == nil || g.Get() != 1 {
		_ = in.close(ctx)
		return nil, fmt.Errorf("%w: opa_wasm_abi_version is not 1", ErrNotPolicy)
	}
	return in, nil
}

func (in *instance) close(ctx context.Context) error {
	err := in.mod.Close(ctx)
	return errors.Join(err, in.glue.Close(ctx))
}

func (in *instance) call(ctx context.Context, f api.Function, args ...uint64) (uint32, error) {
	st := in.stack[:max(len(args), 1)]
	copy(st, args)
	if err := f.CallWithStack(ctx, st); err != nil {
		var abort *AbortError
		if errors.As(err, &abort) {
			return 0, abort
		}
		return 0, fmt.Errorf("wasmengine: %w", err)
	}
	return uint32(st[0]), nil
}

// cstring returns a view of the NUL-terminated string at addr.
func (in *instance) cstring(addr uint32) ([]byte, error) {
	b, ok := in.mem.Read(addr, in.mem.Size()-addr)
	if !ok {
		return nil, errors.New("wasmengine: result address out of range")
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, errors.New("wasmengine: unterminated result")
	}
	return b[:i], nil
}

func (in *instance) dumpJSON(ctx context.Context, addr uint32) ([]byte, error) {
	p, err := in.call(ctx, in.dump, uint64(addr))
	if err != nil {
		return nil, err
	}
	s, err := in.cstring(p)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(s), nil
}

// load initialises the heap of the first instance, checks the module's entrypoints and
// builtins, parses the data once and evaluates the manifest.
func (e *Engine) load(ctx context.Context, in *instance, data []byte) error {
	if _, ok := in.mem.Grow(headroomPages); !ok {
		return errors.New("wasmengine: cannot grow memory")
	}
	if _, err := in.call(ctx, in.malloc, 0); err != nil {
		return err
	}
	addr, err := in.call(ctx, in.builtins)
	if err != nil {
		return err
	}
	raw, err := in.dumpJSON(ctx, addr)
	if err != nil {
		return err
	}
	var builtins map[string]int
	if err := json.Unmarshal(raw, &builtins); err != nil {
		return fmt.Errorf("%w: builtins(): %v", ErrNotPolicy, err)
	}
	if len(builtins) > 0 {
		names := make([]string, 0, len(builtins))
		for n := range builtins {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("%w: it needs host builtins %v; compile it with policy/capabilities.json", ErrNotPolicy, names)
	}
	if addr, err = in.call(ctx, in.entries); err != nil {
		return err
	}
	if raw, err = in.dumpJSON(ctx, addr); err != nil {
		return err
	}
	var eps map[string]uint64
	if err := json.Unmarshal(raw, &eps); err != nil {
		return fmt.Errorf("%w: entrypoints(): %v", ErrNotPolicy, err)
	}
	decide, ok1 := eps[DecideEntrypoint]
	manifest, ok2 := eps[ManifestEntrypoint]
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: entrypoints %s and %s are required, module has %s", ErrNotPolicy, DecideEntrypoint, ManifestEntrypoint, raw)
	}
	e.decideEP = decide

	p, err := in.call(ctx, in.malloc, uint64(len(data)))
	if err != nil {
		return err
	}
	if !in.mem.Write(p, data) {
		return errors.New("wasmengine: data does not fit in memory")
	}
	if e.dataAddr, err = in.call(ctx, in.parse, uint64(p), uint64(len(data))); err != nil {
		return err
	}
	if e.dataAddr == 0 {
		return errors.New("wasmengine: the policy could not parse the data")
	}
	if _, err := in.call(ctx, in.free, uint64(p)); err != nil {
		return err
	}
	if _, err := in.call(ctx, in.stash); err != nil {
		return err
	}
	if e.dataHeap, err = in.call(ctx, in.heapGet); err != nil {
		return err
	}
	in.res.clear(e.dataHeap)
	e.pages = in.mem.Size() / pageSize
	img, _ := in.mem.Read(0, in.mem.Size())
	e.image = bytes.Clone(img)

	out, err := e.eval(ctx, in, manifest, []byte(`{}`), nil)
	if err != nil {
		return fmt.Errorf("wasmengine: manifest: %w", err)
	}
	if e.manifest, err = core.ParseManifest(out); err != nil {
		return fmt.Errorf("%w: manifest %s: %v", ErrNotPolicy, out, err)
	}
	return nil
}

// clone makes a new instance of v whose memory is the loaded image.
func (e *Engine) clone(ctx context.Context, v *variant) (*instance, error) {
	in, err := v.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	if cur := in.mem.Size() / pageSize; cur < e.pages {
		if _, ok := in.mem.Grow(e.pages - cur); !ok {
			_ = in.close(ctx)
			return nil, errors.New("wasmengine: cannot grow memory")
		}
	}
	in.mem.Write(0, e.image)
	if _, err := in.call(ctx, in.heapSet, uint64(e.dataHeap)); err != nil {
		_ = in.close(ctx)
		return nil, err
	}
	in.res.clear(e.dataHeap)
	return in, nil
}

var (
	resultPrefix = []byte(`[{"result":`)
	resultSuffix = []byte(`}]`)
)

// eval evaluates entrypoint ep on input and appends the canonical result to dst. The input
// is written above the instance's resident facts, whose heap opa_eval keeps.
func (e *Engine) eval(ctx context.Context, in *instance, ep uint64, input, dst []byte) ([]byte, error) {
	base := in.res.top
	need := uint64(base) + uint64(len(input))
	if size := uint64(in.mem.Size()); need+pageSize > size {
		if _, ok := in.mem.Grow(uint32((need + pageSize - size + pageSize - 1) / pageSize)); !ok {
			return dst, errors.New("wasmengine: input does not fit in memory")
		}
	}
	in.mem.Write(base, input)
	st := in.stack[:7]
	st[0], st[1], st[2], st[3], st[4], st[5], st[6] = 0, ep, uint64(e.dataAddr), uint64(base), uint64(len(input)), need, 0
	if err := in.eval.CallWithStack(ctx, st); err != nil {
		var abort *AbortError
		if errors.As(err, &abort) {
			return dst, abort
		}
		return dst, fmt.Errorf("wasmengine: %w", err)
	}
	return in.result(uint32(st[0]), dst)
}

// result appends the canonical result of the result set dumped at addr to dst.
func (in *instance) result(addr uint32, dst []byte) ([]byte, error) {
	out, err := in.cstring(addr)
	if err != nil {
		return dst, err
	}
	if !bytes.HasPrefix(out, resultPrefix) || !bytes.HasSuffix(out, resultSuffix) {
		if bytes.Equal(out, []byte("[]")) {
			return dst, core.ErrUndefined
		}
		return dst, fmt.Errorf("wasmengine: unexpected result set %.64q", out)
	}
	return in.sorter.Append(dst, out[len(resultPrefix):len(out)-len(resultSuffix)])
}

// DecideJSON evaluates a query given as JSON and appends the canonical decision to dst.
// It does not allocate once the engine is warm, for a context that cannot end. When ctx
// ends first, the decision stops and the error wraps ctx.Err() (see Cancellation).
func (e *Engine) DecideJSON(ctx context.Context, dst, query []byte) ([]byte, error) {
	if err := core.CheckQuery(query); err != nil {
		return dst, err
	}
	v, in, err := e.acquire(ctx)
	if err != nil {
		return dst, err
	}
	if r := &in.res; r.top != e.dataHeap && int(r.top-e.dataHeap)+expansion*len(query) > e.cfg.resident {
		// The query is parsed above the resident facts: drop them rather than hold both
		// past the bound.
		r.clear(e.dataHeap)
		r.resets++
	}
	out, err := e.eval(ctx, in, e.decideEP, query, dst)
	return out, e.release(ctx, v, in, err)
}

// acquire borrows an instance from the pool of the variant ctx calls for; a ctx that has
// already ended starts no decision.
func (e *Engine) acquire(ctx context.Context) (*variant, *instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("wasmengine: decision not started: %w", err)
	}
	v, err := e.variantFor(ctx)
	if err != nil {
		return nil, nil, err
	}
	var in *instance
	select {
	case in = <-v.pool:
	case <-ctx.Done(): // a nil channel for the plain variant: never chosen
		return nil, nil, fmt.Errorf("wasmengine: decision not started: %w", ctx.Err())
	}
	if in == nil || in.mod.IsClosed() {
		// A placeholder, or an instance wazero closed just after its last call returned
		// (its context ended in that instant): make a fresh one.
		if in != nil {
			_ = in.close(context.WithoutCancel(ctx))
		}
		if in, err = e.clone(context.WithoutCancel(ctx), v); err != nil {
			v.pool <- nil
			return nil, nil, err
		}
	}
	return v, in, nil
}

// release returns in to v's pool after a decision that ended with err, and returns the
// error the caller reports.
func (e *Engine) release(ctx context.Context, v *variant, in *instance, err error) error {
	if (err != nil && isAbort(err)) || in.mod.IsClosed() {
		// An abort may leave the instance's shadow stack unwound, and wazero closes the
		// instance whose context ended mid-call: replace it by a fresh clone (or by nil,
		// made on next use, if that fails now).
		bctx := context.WithoutCancel(ctx)
		_ = in.close(bctx)
		fresh, cerr := e.clone(bctx, v)
		if cerr != nil {
			err = errors.Join(err, cerr)
		}
		in = fresh
	}
	v.pool <- in
	if err != nil && ctx.Err() != nil && !isAbort(err) {
		return fmt.Errorf("wasmengine: decision stopped: %w", ctx.Err())
	}
	return err
}

func isAbort(err error) bool {
	var abort *AbortError
	return errors.As(err, &abort)
}

// Manifest returns what the policy publishes about its operations.
func (e *Engine) Manifest() *core.Manifest { return e.manifest }

// Name returns "wasm".
func (e *Engine) Name() string { return "wasm" }

// Close releases every instance and both runtimes.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	var err error
	for _, v := range e.variants {
		err = errors.Join(err, closeVariant(ctx, v))
	}
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(ctx))
	}
	return err
}

func closeVariant(ctx context.Context, v *variant) error {
	if v == nil {
		return nil
	}
	for len(v.pool) > 0 {
		if in := <-v.pool; in != nil {
			_ = in.close(ctx)
		}
	}
	return v.rt.Close(ctx)
}
