// The driver loop of the host ABI (hostabi/README.md, "The driver loop"; hostabi.Driver in
// Go): gather facts → ask the core → apply what it decides → repeat. It knows no operation
// and no kind by name: per operation it reads only the manifest's prefetch templates.

import { Conflict } from "./host.mjs";

export const MAX_ROUNDS = 64;
export const COMMIT_TIMEOUT_MS = 60_000;

/** The caller cancelled before anything was written. */
export class Canceled extends Error {}

/**
 * Runs one operation: secrets are its secret arguments (described to the core as facts.arg).
 * signal (optional) is the caller's cancellation, honoured until a need marked commit is on
 * the wire. Returns {result, error, rounds, hostFailure, secret(ref)}; throws Canceled, or
 * on a bug (a decision or fact the schema refuses, a policy that never finishes).
 */
export async function run(engine, host, op, args, secrets = {}, signal) {
  const o = host.begin(op);
  try {
    const base = {};
    const names = Object.keys(secrets).filter((k) => secrets[k] !== "").sort();
    if (names.length > 0) base.arg = Object.fromEntries(names.map((k) => [k, o.describe(`arg#${k}`, secrets[k])]));
    const query = { op, args, facts: { ...base }, attempt: 0, round: 0 };
    let pending = instantiate(engine.manifest.ops[op]?.prefetch ?? [], args);
    let hostFailure = false;
    let committed = false;
    const cancel = () => {
      if (!committed && signal?.aborted) throw new Canceled(`${op} canceled before anything was written`);
    };
    for (let round = 0; round < MAX_ROUNDS; round++) {
      query.round = round;
      for (const n of pending) {
        if (Object.hasOwn(query.facts, n.key)) continue;
        if (n.after !== undefined && query.facts[n.after] !== "held") continue;
        cancel();
        if (n.commit && !committed) [committed, signal] = [true, AbortSignal.timeout(COMMIT_TIMEOUT_MS)];
        query.facts[n.key] = await o.fetch(n, signal);
        hostFailure ||= query.facts[n.key]?.host_error !== undefined;
      }
      const d = engine.decide(query);
      if (d.status === "need") {
        pending = d.needs;
        continue;
      }
      if (d.effects.length > 0) cancel();
      const failure = await o.apply(d.effects, signal);
      if (failure === null) {
        return { result: d.result, error: d.error, rounds: round, hostFailure, secret: (ref) => o.refs.get(ref) };
      }
      pending = [];
      if (failure instanceof Conflict) {
        // A precondition failed: decide again from fresh facts, keeping the locks held.
        query.attempt++;
        query.facts = { ...base, ...Object.fromEntries(Object.entries(query.facts).filter(([, v]) => v === "held")) };
        continue;
      }
      hostFailure = true; // the core reports it, and decides that nothing more is applied
      query.facts[`apply@${query.attempt}`] = { host_error: failure.toJSON() };
    }
    throw new Error(`driver: ${op} asked more than ${MAX_ROUNDS} questions`);
  } finally {
    o.end();
  }
}

/**
 * Turns prefetch templates into needs: {"$arg": name} becomes that string argument; a
 * template whose argument is missing or not a string is dropped (the core asks for what it
 * needs, or reports the usage error, in its first answer).
 */
export function instantiate(templates, args) {
  const missing = new Error("missing argument");
  const sub = (v) => {
    if (Array.isArray(v)) return v.map(sub);
    if (v === null || typeof v !== "object") return v;
    if (!Object.hasOwn(v, "$arg")) return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, sub(e)]));
    if (typeof args[v.$arg] !== "string") throw missing;
    return args[v.$arg];
  };
  return templates.flatMap((t) => {
    try {
      return [sub(t)];
    } catch (e) {
      if (e !== missing) throw e;
      return [];
    }
  });
}
