// Stored JSON as a host reads and writes it (hostabi/README.md, "Ledgers" and "Templates"):
// a strict reader whose refusals are the README's fixed reasons and whose numbers other than
// safe integers keep their text, and one writer for keyring values, JSON bodies and ledger
// files (keys sorted by their UTF-8 bytes, no HTML escaping: what the Go host writes).

// Num is a number that is not a safe integer, kept as its text; it travels as {"$number": text}.
export class Num {
  constructor(text) { this.$number = text; }
}

const WS = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
// A number, and no "." or exponent left half-read after it (a JSON scanner refuses "1." as
// a number, but reads "01" as 0 followed by trailing data).
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+|(?!\.))(?:[eE][+-]?[0-9]+|(?![eE]))/y;
const LITERAL = /true|false|null/y;

export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Num);
// own reads a member of an object (never one of Object.prototype's); put sets one, "__proto__" too.
export const own = (o, k) => (isObject(o) && Object.hasOwn(o, k) ? o[k] : undefined);
export const put = (o, k, v) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });

// parse reads one JSON document of UTF-8 bytes strictly: {value}, or {corrupt: reason}.
export function parse(bytes) {
  let text, i = 0;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return { corrupt: "not valid UTF-8" };
  }
  const fail = (corrupt) => { throw { corrupt }; };
  const token = (re) => {
    re.lastIndex = i;
    const m = re.exec(text) ?? fail("not valid JSON");
    i = re.lastIndex;
    return m[0];
  };
  const next = () => {
    token(WS);
    return text[i]; // the next character after whitespace
  };
  const eat = (c) => (next() === c ? ++i : 0); // consumes c if it comes next
  const expect = (c) => eat(c) || fail("not valid JSON");
  const string = () => JSON.parse(token(STRING)).toWellFormed();
  const value = (depth) => {
    if (depth > 64) fail("nested deeper than 64");
    const c = next();
    if (c === '"') return string();
    if (c === "t" || c === "f" || c === "n") return JSON.parse(token(LITERAL));
    if (c !== "[" && c !== "{") {
      const n = token(NUMBER);
      return /^-?[0-9]{1,16}$/.test(n) && Number.isSafeInteger(Number(n)) && n !== "-0" ? Number(n) : new Num(n);
    }
    const [out, close] = c === "[" ? [[], "]"] : [{}, "}"];
    i++;
    if (eat(close)) return out;
    do {
      if (c === "[") out.push(value(depth + 1));
      else {
        next();
        const k = string();
        if (Object.hasOwn(out, k)) fail(`duplicate member ${encode(k)}`);
        expect(":");
        put(out, k, value(depth + 1));
      }
    } while (eat(","));
    expect(close);
    return out;
  };
  try {
    const v = value(0);
    return next() === undefined ? { value: v } : { corrupt: "trailing data after the JSON document" };
  } catch (e) {
    if (e.corrupt === undefined) throw e;
    return e;
  }
}

const bytes = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const quote = (s) => JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

// encode writes a JSON value: compact, or indented by indent with one member per line. Num
// is written as its raw text, or as {"$number": text} when facts is set (the form facts
// carry, in which ledger preconditions are compared).
export function encode(v, indent = "", facts = false, pad = "") {
  if (v instanceof Num && !facts) return v.$number;
  if (v === null || typeof v !== "object") return typeof v === "string" ? quote(v) : JSON.stringify(v);
  const inner = pad + indent, nl = indent ? "\n" + inner : "", list = Array.isArray(v);
  const items = list
    ? v.map((e) => nl + encode(e, indent, facts, inner))
    : Object.keys(v).sort(bytes).map((k) => nl + quote(k) + (indent ? ": " : ":") + encode(v[k], indent, facts, inner));
  return (list ? "[" : "{") + items.join(",") + (indent && items.length ? "\n" + pad : "") + (list ? "]" : "}");
}
