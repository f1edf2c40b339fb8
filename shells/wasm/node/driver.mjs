// The generic driver loop of the host ABI (hostabi/README.md, "The driver loop"): gather
// facts → ask the core → apply what it decides → repeat. It knows no operation by name;
// per operation it only reads the policy's prefetch templates.

export const MAX_ROUNDS = 64;

/** A failed precondition: the driver decides again from fresh facts (ErrConflict). */
export class Conflict extends Error {}

/** A Conflict whose text reads as the Go host's ("hostabi: conflict: <detail>"). */
export function conflict(detail) {
  return new Conflict(`hostabi: conflict: ${detail}`);
}

/** A host-side decision error (CORRUPT_LEDGER, INSECURE_STORE, ...): the operation's error. */
export class CoreError extends Error {
  constructor(code, fix, message, fields = {}) {
    super(fix ? `${message}; fix: ${fix}` : message);
    this.code = code;
    this.fix = fix;
    this.fields = fields;
  }
  /** The error object, as a decision carries it. */
  toObject() {
    return { ...this.fields, code: this.code, message: this.message, fix: this.fix };
  }
}

/**
 * Runs one operation. Returns {result, error, rounds, secret(ref)}; a host failure that is
 * not a CoreError (an injected keyring failure, a bug) is thrown.
 */
export function run(engine, host, op, args, secrets = {}) {
  const o = host.begin(op, secrets);
  const out = { result: undefined, error: undefined, rounds: 0, secret: (ref) => o.secret(ref) };
  try {
    const query = { op, args, facts: {}, attempt: 0, round: 0 };
    let pending = instantiate(engine.manifest.ops[op]?.prefetch ?? [], args);
    for (; out.rounds < MAX_ROUNDS; out.rounds++) {
      query.round = out.rounds;
      try {
        gather(o, query, pending);
        const d = engine.decide(query);
        if (d.status === "need") {
          pending = d.needs;
          continue;
        }
        o.apply(d.effects ?? []);
        if (d.error !== undefined && d.error !== null) out.error = d.error;
        else out.result = d.result;
        return out;
      } catch (e) {
        if (e instanceof CoreError) {
          out.error = e.toObject();
          return out;
        }
        if (!(e instanceof Conflict)) throw e;
      }
      // A precondition failed: decide again from fresh facts, keeping the locks held.
      query.attempt++;
      query.facts = Object.fromEntries(Object.entries(query.facts).filter(([, v]) => v === "held"));
      pending = [];
    }
    throw new Error(`hostabi: ${op} asked more than ${MAX_ROUNDS} questions`);
  } finally {
    o.end();
  }
}

// gather fetches needs in order: a fact already present is not fetched again, and a need
// "after" a lock is skipped unless that lock is held.
function gather(o, query, needs) {
  for (const n of needs) {
    if (Object.prototype.hasOwnProperty.call(query.facts, n.key)) continue;
    if (typeof n.after === "string" && n.after !== "" && query.facts[n.after] !== "held") continue;
    query.facts[n.key] = o.fetch(n);
  }
}

/**
 * Turns prefetch templates into needs: {"$arg": name} becomes that string argument; a
 * template whose argument is missing or not a string is dropped (the core asks for what it
 * needs, or reports the usage error, in its first answer).
 */
export function instantiate(templates, args) {
  const out = [];
  for (const t of templates) {
    const n = {};
    let ok = true;
    for (const [k, v] of Object.entries(t)) {
      const s = substitute(v, args);
      if (s === undefined) {
        ok = false;
        break;
      }
      n[k] = s;
    }
    if (ok && typeof n.key === "string" && n.key !== "" && typeof n.kind === "string" && n.kind !== "") out.push(n);
  }
  return out;
}

function substitute(v, args) {
  if (v !== null && typeof v === "object" && !Array.isArray(v) && typeof v.$arg === "string") {
    const a = args?.[v.$arg];
    return typeof a === "string" ? a : undefined;
  }
  if (Array.isArray(v)) {
    const list = v.map((e) => substitute(e, args));
    return list.includes(undefined) ? undefined : list;
  }
  return v;
}
