// Stored JSON as a host reads and writes it (hostabi/README.md, "Ledgers" and "Templates"):
// a strict reader whose refusals are the README's fixed reasons and whose numbers other than
// safe integers keep their text, and one writer for keyring values, JSON bodies and ledger
// files (keys sorted by their UTF-8 bytes, no HTML escaping: what the Go host writes).

/** A number that is not a safe integer, kept as its text; it travels as {"$number": text}. */
export class Num {
  constructor(text) {
    this.$number = text;
  }
}

/** Why a stored document is refused: one of the README's reasons. */
export class Corrupt extends Error {}

const WS = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PARTIAL = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?/y; // what a scanner consumes as a number
const LITERAL = /true|false|null/y;
const fail = (reason) => {
  throw new Corrupt(reason);
};

export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Num);
/** A member of an object (never one of Object.prototype's). */
export const own = (o, k) => (isObject(o) && Object.hasOwn(o, k) ? o[k] : undefined);
/** Sets a member, "__proto__" included. */
export const put = (o, k, v) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });

/** Parses one JSON document of UTF-8 bytes strictly, or throws Corrupt. */
export function parse(bytes) {
  let text, i = 0;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    fail("not valid UTF-8");
  }
  const match = (re) => {
    re.lastIndex = i;
    const m = re.exec(text);
    if (m) i = re.lastIndex;
    return m?.[0];
  };
  const token = (re) => match(re) ?? fail("not valid JSON");
  const string = () => JSON.parse(token(STRING)).toWellFormed();
  const value = (depth) => {
    if (depth > 64) fail("nested deeper than 64");
    match(WS);
    const open = text[i];
    if (open === "{" || open === "[") {
      const out = open === "{" ? {} : [], close = open === "{" ? "}" : "]";
      i++;
      match(WS);
      if (text[i] === close) return i++, out;
      for (;;) {
        if (open === "[") out.push(value(depth + 1));
        else {
          match(WS);
          const k = string();
          if (Object.hasOwn(out, k)) fail(`duplicate member ${encode(k)}`);
          match(WS);
          if (text[i++] !== ":") fail("not valid JSON");
          put(out, k, value(depth + 1));
        }
        match(WS);
        const next = text[i++];
        if (next === close) return out;
        if (next !== ",") fail("not valid JSON");
      }
    }
    if (open === '"') return string();
    const literal = match(LITERAL);
    if (literal) return JSON.parse(literal);
    const start = i, n = token(NUMBER), end = i;
    i = start;
    if (match(PARTIAL).length !== n.length) fail("not valid JSON");
    i = end;
    return /^-?[0-9]+$/.test(n) && Number.isSafeInteger(Number(n)) && n !== "-0" ? Number(n) : new Num(n);
  };
  const v = value(0);
  match(WS);
  if (i < text.length) fail("trailing data after the JSON document");
  return v;
}

const bytes = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const quote = (s) => JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/**
 * Writes a JSON value: compact, or indented by indent with one member per line. Num is
 * written as its raw text, or as {"$number": text} when facts is set (the form facts carry,
 * in which ledger preconditions are compared).
 */
export function encode(v, indent = "", facts = false, pad = "") {
  if (v instanceof Num && !facts) return v.$number;
  if (v === null || typeof v !== "object") return typeof v === "string" ? quote(v) : JSON.stringify(v);
  const inner = pad + indent, nl = indent ? "\n" + inner : "";
  const items = Array.isArray(v)
    ? v.map((e) => nl + encode(e, indent, facts, inner))
    : Object.keys(v).sort(bytes).map((k) => nl + quote(k) + (indent ? ": " : ":") + encode(v[k], indent, facts, inner));
  const [open, close] = Array.isArray(v) ? "[]" : "{}";
  return items.length === 0 ? open + close : open + items.join(",") + (indent ? "\n" + pad : "") + close;
}
