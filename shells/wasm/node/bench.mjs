#!/usr/bin/env node
// Micro-benchmark of the gate's hot path on Node (a granted agent whose access token is
// cached and fresh: one question, no lock, no request). It reports; it asserts only that
// the path measured is the hot path.
//
//   node bench.mjs [--ms 2000] [--query FILE]
//
// decide: one evaluation of grantwire/decide through @open-policy-agent/opa-wasm, on the
//         hot path's query (JSON encoding of the input and parsing of the result included).
// run:    the whole operation through the JavaScript driver and host on the in-memory world
//         (prefetch of five facts, one decision, no effect).
// --query writes the hot path's query as JSON (for a comparison on the Go engines).

import { writeFileSync } from "node:fs";
import { run } from "./driver.mjs";
import { defaultCatalog, newEngine, policyData } from "./engine.mjs";
import { DEFAULT_SERVICE, Host, clientUser, connectionUser, encodeClient, encodeConnection } from "./host.mjs";
import { ledgerJSON } from "./json.mjs";
import { World } from "./memworld.mjs";

function flag(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : def;
}

const budget = Number(flag("--ms", "2000"));
const catalog = defaultCatalog();
const engine = await newEngine(policyData(catalog));
const world = new World(1_790_000_000_000);
const caps = world.capabilities((id) => (catalog.connectors[id] ? { ...catalog.connectors[id], id } : undefined), DEFAULT_SERVICE);
caps.keyring.set(DEFAULT_SERVICE, clientUser("google"), encodeClient({ client_id: "client-1", client_secret: "google-secret-1" }));
caps.keyring.set(DEFAULT_SERVICE, connectionUser("google"), encodeConnection({
  account_email: "user@example.com", client_id_hash: "f08ce266", connected_at: 1_789_913_600,
  refresh_token: "rt-google-1", scopes: ["gmail.readonly"], tenant: null, account_type: null,
}));
world.server.issue("google", "rt-google-1");
caps.ledgers.write("grants", ledgerJSON({ google: { "builtin:chat": ["gmail.readonly"] } }), "");
const host = new Host(caps);
const args = { provider: "google", scopes: ["gmail.readonly"], agent: "builtin:chat" };

const first = run(engine, host, "get_access_token", args); // refreshes and caches the token
if (first.error) throw new Error(`setup: ${JSON.stringify(first.error)}`);
let hot;
engine.onDecide = (q) => (hot = q);
const again = run(engine, host, "get_access_token", args);
engine.onDecide = null;
if (again.rounds !== 0 || !again.result || again.secret(again.result.access_token.$ref) !== "access-google-0001") {
  throw new Error(`not the hot path: ${JSON.stringify(again)}`);
}
const query = JSON.parse(hot);
const queryFile = flag("--query");
if (queryFile) writeFileSync(queryFile, hot);

// measure runs f in batches for about budget ms and returns the median ns per call.
function measure(f) {
  for (let i = 0; i < 2000; i++) f(); // warm up (JIT, Wasm tiers)
  const batch = 1000;
  const samples = [];
  const until = performance.now() + budget;
  while (performance.now() < until || samples.length < 5) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) f();
    samples.push(Number(process.hrtime.bigint() - t0) / batch);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[samples.length >> 1], min: samples[0], calls: samples.length * batch };
}

const fmt = (r) => `${(r.median / 1000).toFixed(1)} µs/op (min ${(r.min / 1000).toFixed(1)} µs, ${r.calls} calls)`;
console.log(`node ${process.version}, @open-policy-agent/opa-wasm, policy.wasm; gate hot path (${hot.length}-byte query)`);
console.log(`decide  ${fmt(measure(() => engine.decide(query)))}`);
console.log(`run     ${fmt(measure(() => run(engine, host, "get_access_token", args)))}`);
