# The core in Python: policy.wasm (the very file Go embeds, packaged beside this module) run
# by wasmtime, with the catalog as data, answering grantwire/decide and grantwire/manifest
# through OPA's Wasm ABI 1.2+ (opa_eval: input JSON in, result JSON out, in one call). The
# policy needs no host builtin; the module says so (builtins() is {}), and a policy that did
# would be refused here rather than fail on first use.

import ctypes
import json
import threading
from importlib import resources

try:
    import wasmtime
except ImportError as e:  # a missing runtime says which one, and how to install it
    raise ImportError("grantwire runs policy.wasm on wasmtime, which is not installed: pip install 'wasmtime>=50,<51'") from e

_ABI = ("opa_malloc", "opa_free", "opa_json_parse", "opa_json_dump", "opa_eval", "opa_heap_ptr_get", "builtins", "entrypoints")


_compiled = {}


def policy_wasm():
    """The bytes of the packaged policy.wasm."""
    try:
        return resources.files(__package__).joinpath("policy.wasm").read_bytes()
    except FileNotFoundError:
        raise PolicyError("policy.wasm is missing from the grantwire package: reinstall it from a checkout (pip install ./shells/python)") from None


class PolicyError(Exception):
    """policy.wasm could not be loaded or evaluated (a bug or a broken installation)."""


def _trap(what):
    def trap(*args):
        raise PolicyError(f"policy.wasm called {what}")
    return trap


class Engine:
    """policy.wasm with policy data; decide() is safe for concurrent use (one instance, locked).
    on_decide(query_bytes, decision_bytes), when set, sees every evaluation."""

    def __init__(self, data, wasm=None):
        wasm = wasm if wasm is not None else policy_wasm()
        if wasm not in _compiled:  # once per process; wasmtime's cache spares a second process the compilation
            config = wasmtime.Config()
            config.cache = True
            engine = wasmtime.Engine(config)
            _compiled[wasm] = engine, wasmtime.Module(engine, wasm)
        engine, module = _compiled[wasm]
        self._store = store = wasmtime.Store(engine)
        limits = next(i.type.limits for i in module.imports if i.name == "memory")
        self._mem, linker, i32 = wasmtime.Memory(store, wasmtime.MemoryType(wasmtime.Limits(limits.min, None))), wasmtime.Linker(engine), wasmtime.ValType.i32()
        linker.define(store, "env", "memory", self._mem)
        linker.define_func("env", "opa_abort", wasmtime.FuncType([i32], []), lambda addr: _trap(f"opa_abort: {self._cstring(addr)!r}")())
        linker.define_func("env", "opa_println", wasmtime.FuncType([i32], []), lambda addr: None)
        for n in range(5):
            linker.define_func("env", f"opa_builtin{n}", wasmtime.FuncType([i32] * (n + 2), [i32]), _trap("a host builtin"))
        ex = linker.instantiate(store, module).exports(store)
        self._fn = {name: ex[name] for name in _ABI}
        if (ex["opa_wasm_abi_version"].value(store), ex["opa_wasm_abi_minor_version"].value(store) >= 2) != (1, True) or self._dump("builtins") != {}:
            raise PolicyError("policy.wasm is not OPA Wasm ABI 1.2+, or needs host builtins this shell does not provide")
        self._entrypoints = self._dump("entrypoints")
        raw = data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode()
        addr = self._fn["opa_malloc"](store, len(raw))
        self._mem.write(store, raw, addr)
        self._data = self._fn["opa_json_parse"](store, addr, len(raw))
        self._fn["opa_free"](store, addr)
        self._heap, self._lock, self.on_decide = self._fn["opa_heap_ptr_get"](store), threading.Lock(), None
        if self._data == 0:
            raise PolicyError("the policy data is not JSON")
        self.manifest = json.loads(self.evaluate("grantwire/manifest", b"{}"))

    def _cstring(self, addr):
        return ctypes.string_at(ctypes.addressof(self._mem.data_ptr(self._store).contents) + addr)

    def _dump(self, export):
        return json.loads(self._cstring(self._fn["opa_json_dump"](self._store, self._fn[export](self._store))))

    def evaluate(self, entrypoint, raw_input):
        """The result of an entrypoint on input JSON bytes, as the JSON bytes OPA wrote."""
        with self._lock:
            store, end = self._store, self._heap + len(raw_input)
            if end > self._mem.data_len(store):  # the input goes at the heap's top, which opa_eval resets itself
                self._mem.grow(store, (end - self._mem.data_len(store)) // 65536 + 1)
            self._mem.write(store, raw_input, self._heap)
            out = self._cstring(self._fn["opa_eval"](store, 0, self._entrypoints[entrypoint], self._data, self._heap, len(raw_input), end, 0))
        if not (out.startswith(b'[{"result":') and out.endswith(b"}]")):
            raise PolicyError(f"{entrypoint} is undefined for this input: {out[:200]!r}")
        return out[len(b'[{"result":'):-2]

    def decide(self, query):
        """The decision on a query (a JSON object)."""
        raw = json.dumps(query, ensure_ascii=False, separators=(",", ":")).encode()
        out = self.evaluate("grantwire/decide", raw)
        self.on_decide and self.on_decide(raw, out)
        return json.loads(out)
