#!/usr/bin/env node
// Micro-benchmark of the gate's hot path on Node (a granted agent whose access token is
// cached and fresh: one question, no lock, no request). It reports; it asserts only that
// the path measured is the hot path.
//
//   node bench.mjs [--ms 2000] [--query FILE]
//
// decide: one evaluation of grantwire/decide through @open-policy-agent/opa-wasm on the hot
//         path's query (schema validation of query and decision, JSON encoding of the input
//         and parsing of the result included).
// run:    the whole operation through the JavaScript driver and host on the in-memory world
//         (the prefetch, the facts asked, one decision, no effect).
// --query writes the hot path's query as JSON (for a comparison on the Go engines).

import { writeFileSync } from "node:fs";
import { run } from "./driver.mjs";
import { newEngine } from "./engine.mjs";
import { Host } from "./host.mjs";
import { Runner, baseCatalog } from "./run.mjs";

function flag(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : def;
}

const budget = Number(flag("--ms", "2000"));
const catalog = baseCatalog();
const engine = await newEngine({ catalog: { connectors: catalog.connectors } });
const r = new Runner({ worldSpec: {} }, engine, catalog, () => {});
r.act({
  set_clients: { google: { client_id: "client-1", client_secret: "google-secret-1" } },
  set_connections: { google: { scopes: ["gmail.readonly"], client_id: "client-1", refresh_token: "rt-google-1" } },
  set_ledgers: { grants: { google: { "builtin:chat": ["gmail.readonly"] } } },
});
const host = new Host(r.caps);
const args = { provider: "google", scopes: ["gmail.readonly"], agent: "builtin:chat" };

const first = await run(engine, host, "get_access_token", args); // refreshes and caches the token
if (first.error) throw new Error(`setup: ${JSON.stringify(first.error)}`);
let hot;
engine.onDecide = (q) => (hot = q);
const again = await run(engine, host, "get_access_token", args);
engine.onDecide = null;
if (again.error || again.secret(again.result.access_token.$ref) !== first.secret(first.result.access_token.$ref)) {
  throw new Error(`not the hot path: ${JSON.stringify(again.error ?? again.result)}`);
}
const query = JSON.parse(hot);
const queryFile = flag("--query");
if (queryFile) writeFileSync(queryFile, hot);

// measure runs f in batches for about budget ms and returns the median ns per call.
async function measure(f) {
  for (let i = 0; i < 2000; i++) await f(); // warm up (JIT, Wasm tiers)
  const batch = 500;
  const samples = [];
  const until = performance.now() + budget;
  while (performance.now() < until || samples.length < 5) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) await f();
    samples.push(Number(process.hrtime.bigint() - t0) / batch);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[samples.length >> 1], min: samples[0], calls: samples.length * batch };
}

const fmt = (m) => `${(m.median / 1000).toFixed(1)} µs/op (min ${(m.min / 1000).toFixed(1)} µs, ${m.calls} calls)`;
console.log(`node ${process.version}, @open-policy-agent/opa-wasm, policy.wasm; gate hot path (${hot.length}-byte query, ${again.rounds} rounds)`);
console.log(`decide  ${fmt(await measure(() => engine.decide(query)))}`);
console.log(`run     ${fmt(await measure(() => run(engine, host, "get_access_token", args)))}`);
