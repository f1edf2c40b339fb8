package wasmengine

// OPA's policy.wasm imports its linear memory and seven functions from the module "env".
// wazero takes every import of one module name from one module, and a wazero host module
// cannot define a memory. So each instance gets a tiny hand-encoded Wasm module that defines
// the memory and re-exports the host functions (which live in the host module hostModule)
// under the names the policy expects.
//
// See https://webassembly.github.io/spec/core/binary/modules.html

const hostModule = "grantwire_opa_host"

// hostFuncs lists the host functions in import order with their parameter counts; all
// parameters are i32, and every function but the first two returns one i32.
var hostFuncs = []struct {
	name    string
	params  int
	results int
}{
	{"opa_abort", 1, 0},
	{"opa_println", 1, 0},
	{"opa_builtin0", 2, 1},
	{"opa_builtin1", 3, 1},
	{"opa_builtin2", 4, 1},
	{"opa_builtin3", 5, 1},
	{"opa_builtin4", 6, 1},
}

func uleb(dst []byte, v uint32) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			dst = append(dst, b|0x80)
			continue
		}
		return append(dst, b)
	}
}

func name(dst []byte, s string) []byte {
	dst = uleb(dst, uint32(len(s)))
	return append(dst, s...)
}

func section(dst []byte, id byte, body []byte) []byte {
	dst = append(dst, id)
	dst = uleb(dst, uint32(len(body)))
	return append(dst, body...)
}

// glueModule encodes the "env" module: a memory of minPages (and maxPages when hasMax)
// exported as "memory", and every host function imported from hostModule and re-exported.
func glueModule(minPages, maxPages uint32, hasMax bool) []byte {
	const i32 = 0x7f
	var types, imports, exports []byte

	types = uleb(types, uint32(len(hostFuncs)))
	for _, f := range hostFuncs {
		types = append(types, 0x60)
		types = uleb(types, uint32(f.params))
		for i := 0; i < f.params; i++ {
			types = append(types, i32)
		}
		types = uleb(types, uint32(f.results))
		for i := 0; i < f.results; i++ {
			types = append(types, i32)
		}
	}

	imports = uleb(imports, uint32(len(hostFuncs)))
	for i, f := range hostFuncs {
		imports = name(imports, hostModule)
		imports = name(imports, f.name)
		imports = append(imports, 0x00) // function
		imports = uleb(imports, uint32(i))
	}

	var mem []byte
	mem = uleb(mem, 1)
	if hasMax {
		mem = append(mem, 0x01)
		mem = uleb(mem, minPages)
		mem = uleb(mem, maxPages)
	} else {
		mem = append(mem, 0x00)
		mem = uleb(mem, minPages)
	}

	exports = uleb(exports, uint32(len(hostFuncs)+1))
	exports = name(exports, "memory")
	exports = append(exports, 0x02, 0x00) // memory 0
	for i, f := range hostFuncs {
		exports = name(exports, f.name)
		exports = append(exports, 0x00) // function
		exports = uleb(exports, uint32(i))
	}

	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = section(out, 1, types)
	out = section(out, 2, imports)
	out = section(out, 5, mem)
	out = section(out, 7, exports)
	return out
}
