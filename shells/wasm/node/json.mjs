// JSON writers shared by the Node shell and its runner.
//
// - canonical(): grantwire's canonical JSON (internal/canon): compact, object members sorted by
//   the UTF-8 bytes of their keys, strings escaped as OPA's Wasm writer escapes them. The
//   npm loader hands back plain objects, so a decision is compared in this form.
// - goJSON(): what Go's encoding/json writes for the same value (sorted map keys, HTML
//   characters escaped): transcripts and error bodies are compared with the Go host's.
// - ledgerJSON(): how grantwire writes a ledger file (sorted keys, 2-space indent, no HTML
//   escaping), as hostabi's ledgerDoc.bytes does.

const HEX = "0123456789abcdef";

function byteOrder(a, b) {
  if (a === b) return 0;
  // UTF-16 order equals UTF-8 byte order unless a surrogate is involved.
  if (/[\ud800-\udfff]/.test(a) || /[\ud800-\udfff]/.test(b)) {
    return Buffer.compare(Buffer.from(a), Buffer.from(b));
  }
  return a < b ? -1 : 1;
}

/** Object keys in canonical (byte) order. */
export function sortedKeys(o) {
  return Object.keys(o).sort(byteOrder);
}

function canonString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c < 0x20) out += "\\u00" + HEX[c >> 4] + HEX[c & 15];
    else out += s[i];
  }
  return out + '"';
}

function goString(s, html) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c === 0x08) out += "\\b";
    else if (c === 0x0c) out += "\\f";
    else if (c < 0x20) out += "\\u00" + HEX[c >> 4] + HEX[c & 15];
    else if (html && (c === 0x3c || c === 0x3e || c === 0x26)) out += "\\u00" + HEX[c >> 4] + HEX[c & 15];
    else if (c === 0x2028 || c === 0x2029) out += "\\u" + c.toString(16);
    else out += s[i];
  }
  return out + '"';
}

function number(n) {
  if (!Number.isFinite(n)) throw new Error(`json: ${n} is not a JSON number`);
  return Object.is(n, -0) ? "0" : String(n);
}

function write(v, str) {
  if (v === null || v === undefined) return "null";
  switch (typeof v) {
    case "boolean":
      return v ? "true" : "false";
    case "number":
      return number(v);
    case "string":
      return str(v);
    case "object":
      if (Array.isArray(v)) return "[" + v.map((e) => write(e, str)).join(",") + "]";
      return "{" + sortedKeys(v).map((k) => str(k) + ":" + write(v[k], str)).join(",") + "}";
  }
  throw new Error(`json: cannot write a ${typeof v}`);
}

/** grantwire's canonical JSON of a JSON value (internal/canon). */
export function canonical(v) {
  return write(v, canonString);
}

/** Compact JSON as Go's json.Marshal writes a map-based value (sorted keys, HTML escaped). */
export function goJSON(v) {
  return write(v, (s) => goString(s, true));
}

/** Compact JSON in the given key order (Go structs), Go escaping. */
export function goJSONOrdered(v) {
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    return "{" + Object.keys(v).map((k) => goString(k, true) + ":" + goJSON(v[k])).join(",") + "}";
  }
  return goJSON(v);
}

function indented(v, pad, str) {
  if (v === null || typeof v !== "object") return write(v, str);
  const inner = pad + "  ";
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    return "[\n" + v.map((e) => inner + indented(e, inner, str)).join(",\n") + "\n" + pad + "]";
  }
  const keys = sortedKeys(v);
  if (keys.length === 0) return "{}";
  return "{\n" + keys.map((k) => inner + str(k) + ": " + indented(v[k], inner, str)).join(",\n") + "\n" + pad + "}";
}

/** A ledger file as grantwire writes it: sorted keys, 2-space indent, no HTML escaping. */
export function ledgerJSON(v) {
  return indented(v, "", (s) => goString(s, false));
}

/** json.MarshalIndent(v, "", "  ") (HTML escaped): how the Go runner stages a ledger. */
export function goIndent(v) {
  return indented(v, "", (s) => goString(s, true));
}

/** Deep equality of JSON values (reflect.DeepEqual on decoded JSON). */
export function deepEqual(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

/**
 * Subset reports ("" when it holds) whether want is a subset of got: objects need every key
 * of want (recursively); arrays need the same length and each element a subset of the
 * element at the same index; everything else must be equal (conformance.Subset).
 */
export function subset(want, got, path = "") {
  const at = path === "" ? "." : path;
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) {
      return `at ${at}: got ${goJSON(got)}, want ${want.length} elements like ${goJSON(want)}`;
    }
    for (let i = 0; i < want.length; i++) {
      const m = subset(want[i], got[i], `${path}[${i}]`);
      if (m) return m;
    }
    return "";
  }
  if (want === null || typeof want !== "object") {
    return deepEqual(want, got) ? "" : `at ${at}: got ${goJSON(got)}, want ${goJSON(want)}`;
  }
  if (got === null || typeof got !== "object" || Array.isArray(got)) {
    return `at ${at}: got ${goJSON(got)}, want an object`;
  }
  for (const k of sortedKeys(want)) {
    if (!Object.prototype.hasOwnProperty.call(got, k)) return `at ${at}: missing ${JSON.stringify(k)}`;
    const m = subset(want[k], got[k], `${path}.${k}`);
    if (m) return m;
  }
  return "";
}

/** A JSON merge patch (RFC 7386). */
export function mergePatch(doc, patch) {
  if (patch === undefined) return doc === undefined ? {} : doc;
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out = doc !== null && typeof doc === "object" && !Array.isArray(doc) ? { ...doc } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** A deep copy of a JSON value. */
export function clone(v) {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}
