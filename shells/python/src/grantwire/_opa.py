# OPA's Wasm ABI on wasmtime: an OPA policy module with its data, evaluated at an entrypoint
# through opa_eval (ABI 1.2+: input JSON in, result JSON out, in one call). It is what the
# Node shell takes from npm (@open-policy-agent/opa-wasm, OPA's own loader); PyPI has no
# well-kept loader for current wasmtime, so it is written here, and it knows nothing of
# grantwire. A policy that needs a host builtin is refused when it is loaded, rather than
# failing on first use.

import ctypes
import functools
import json
import threading

try:
    import wasmtime
except ImportError as e:  # a missing runtime says which one, and how to install it
    raise ImportError("grantwire runs policy.wasm on wasmtime, which is not installed: pip install 'wasmtime>=50,<51'") from e


class PolicyError(Exception):
    """policy.wasm could not be loaded or evaluated (a bug or a broken installation)."""


def _trap(why):
    raise PolicyError("policy.wasm " + why)


@functools.cache
def _module(wasm):
    """A module compiled, once per process (wasmtime's cache spares the next process the compilation)."""
    config = wasmtime.Config()
    config.cache = True
    engine = wasmtime.Engine(config)
    return engine, wasmtime.Module(engine, wasm)


class Policy:
    """An instance of a policy module with data (JSON bytes); evaluate() is safe for concurrent
    use (one instance, locked)."""

    def __init__(self, wasm, data):
        engine, module = _module(wasm)
        self._store, linker, i32 = wasmtime.Store(engine), wasmtime.Linker(engine), wasmtime.ValType.i32()
        limits = next(i.type.limits for i in module.imports if i.name == "memory")
        self._mem = wasmtime.Memory(self._store, wasmtime.MemoryType(wasmtime.Limits(limits.min, None)))
        linker.define(self._store, "env", "memory", self._mem)
        linker.define_func("env", "opa_abort", wasmtime.FuncType([i32], []), lambda addr: _trap(f"aborted: {self._cstring(addr)!r}"))
        linker.define_func("env", "opa_println", wasmtime.FuncType([i32], []), lambda addr: None)
        for n in range(5):
            linker.define_func("env", f"opa_builtin{n}", wasmtime.FuncType([i32] * (n + 2), [i32]), lambda *args: _trap("called a host builtin"))
        self._fn = fn = linker.instantiate(self._store, module).exports(self._store)
        if (fn["opa_wasm_abi_version"].value(self._store), fn["opa_wasm_abi_minor_version"].value(self._store) >= 2) != (1, True) or self._dump("builtins"):
            raise PolicyError("policy.wasm is not OPA Wasm ABI 1.2+, or needs host builtins this shell does not provide")
        self._entrypoints = self._dump("entrypoints")
        addr = fn["opa_malloc"](self._store, len(data))
        self._mem.write(self._store, data, addr)
        self._data = fn["opa_json_parse"](self._store, addr, len(data))
        fn["opa_free"](self._store, addr)
        self._heap, self._lock = fn["opa_heap_ptr_get"](self._store), threading.Lock()
        if self._data == 0:
            raise PolicyError("the policy data is not JSON")

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

