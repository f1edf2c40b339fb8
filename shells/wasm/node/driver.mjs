// The driver loop of the host ABI (hostabi/README.md, "The driver loop"; hostabi.Driver in
// Go): gather facts → ask the core → apply what it decides → repeat. It knows no operation
// and no kind by name: per operation it reads only the manifest's prefetch templates.

import { validate } from "./engine.mjs";
import { Conflict } from "./host.mjs";

export const MAX_ROUNDS = 400; // a device connect polls up to 300 times (hostabi.MaxRounds)
export const COMMIT_TIMEOUT_MS = 60_000;

// Canceled: the caller cancelled the operation before anything was written.
export class Canceled extends Error {}

// run performs one operation. secrets are its secret arguments (described to the core under
// facts.arg); signal, optional, is the caller's cancellation, honoured until a need marked
// commit is on the wire (from there the operation finishes under its own deadline). It
// returns {result, error, rounds, hostFailure, secret(ref)}, and throws Canceled, or on a
// bug (a decision or fact the schema refuses, a policy that never finishes).
export async function run(engine, host, op, args, secrets = {}, signal) {
  const o = host.begin(op);
  try {
    const arg = Object.keys(secrets).filter((k) => secrets[k] !== "").sort().map((k) => [k, o.describe(`arg#${k}`, secrets[k])]);
    const base = arg.length > 0 ? { arg: Object.fromEntries(arg) } : {};
    const query = { op, args, facts: { ...base }, attempt: 0, round: 0 };
    let pending = instantiate(engine.manifest?.ops?.[op]?.prefetch ?? [], args);
    let [hostFailure, committed] = [false, false];
    const cancel = () => {
      if (!committed && signal?.aborted) throw new Canceled(`${op} canceled before anything was written`);
    };
    for (; query.round < MAX_ROUNDS; query.round++) {
      for (const n of pending) {
        if (Object.hasOwn(query.facts, n.key) || (n.after !== undefined && query.facts[n.after] !== "held")) continue;
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
      const secret = (ref) => o.refs.get(ref);
      if (failure === null) return { result: d.result, error: d.error, rounds: query.round, hostFailure, secret };
      pending = [];
      if (failure instanceof Conflict) {
        // A precondition failed: decide again from fresh facts, keeping the locks held.
        query.attempt++;
        query.facts = { ...base, ...Object.fromEntries(Object.entries(query.facts).filter(([, v]) => v === "held")) };
      } else {
        hostFailure = true; // the core reports it, and decides that nothing more is applied
        query.facts[`apply@${query.attempt}`] = { host_error: failure.json };
      }
    }
    throw new Error(`driver: ${op} asked more than ${MAX_ROUNDS} questions`);
  } finally {
    o.end();
  }
}

// instantiate turns prefetch templates into needs: {"$arg": name} becomes that string
// argument; a template whose argument is missing or not a string is dropped (the core asks
// for what it needs, or reports the usage error, in its first answer).
export function instantiate(templates, args) {
  return templates.flatMap((t) => {
    let complete = true;
    const arg = (name) => (typeof args[name] === "string" ? args[name] : (complete = false));
    const need = JSON.parse(JSON.stringify(t), (_, v) => (typeof v?.$arg === "string" ? arg(v.$arg) : v));
    if (complete) validate("needs.schema.json#/$defs/need", need);
    return complete ? [need] : [];
  });
}
