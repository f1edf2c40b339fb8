#!/usr/bin/env node
// Runs grantwire's conformance corpus (conformance/corpus/*.yaml) on the Node shell:
// policy.wasm through @open-policy-agent/opa-wasm, the JavaScript driver and host, and the
// in-memory world. Every expectation is checked as conformance/run.go checks it; a scenario
// listed for this shell in exceptions.yaml must fail, so a fixed difference is noticed.
//
//   node run.mjs [--report FILE] [--queries FILE] [--only SUBSTRING] [--quiet]
//
// --report writes a JSON report (per scenario: family, failures; per corpus file: its
// canonical JSON, to compare the YAML reading with Go's); --queries writes every query sent
// to the core with the canonical decision the loader returned (JSON lines), for the Go test
// to replay through both Go engines. Exit status 1 when any scenario fails.

import { closeSync, openSync, readFileSync, readdirSync, writeFileSync, writeSync, existsSync } from "node:fs";
import { parse as parseYAML } from "yaml";
import { run } from "./driver.mjs";
import { canonical, deepEqual, goIndent, goJSON, mergePatch, sortedKeys, subset } from "./json.mjs";
import { CoreError } from "./driver.mjs";
import { defaultCatalog, newEngine, policyData, REPO } from "./engine.mjs";
import {
  Host, KeyringNotFound, LEDGERS, DEFAULT_SERVICE, clientIDHash, clientUser, connectionUser, encodeClient,
  encodeConnection, mcpUser, version,
} from "./host.mjs";
import { InjectedFailure, World } from "./memworld.mjs";

export const SHELL = "node/opa-wasm";
const DEFAULT_CLOCK = 1_790_000_000_000;
const MODULE = "grantwire.host.v1";

// --- the corpus -----------------------------------------------------------------------------

/** Loads every *.yaml of dir as conformance.Load does (exceptions.yaml is the exceptions table). */
export function loadCorpus(dir) {
  const files = [];
  let exceptions = {};
  const seen = new Map();
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".yaml")).sort()) {
    const doc = parseYAML(readFileSync(`${dir}/${name}`, "utf8"));
    if (name === "exceptions.yaml") {
      exceptions = doc ?? {};
      continue;
    }
    const family = name.slice(0, -".yaml".length);
    if (doc?.family !== family) throw new Error(`conformance: ${name}: family must be ${JSON.stringify(family)}`);
    for (const [i, s] of (doc.scenarios ?? []).entries()) {
      if (typeof s.name !== "string" || s.name === "" || /[/ ]/.test(s.name)) {
        throw new Error(`conformance: ${name}: scenario ${i}: name must be non-empty, without spaces or slashes`);
      }
      s.family = family;
      s.id = `${family}/${s.name}`;
      if (seen.has(s.id)) throw new Error(`conformance: ${name}: scenario ${s.id} already in ${seen.get(s.id)}`);
      seen.set(s.id, name);
      checkScenario(s);
      s.worldSpec = mergePatch(doc.base, s.world);
    }
    files.push({ name, family, doc });
  }
  for (const id of Object.keys(exceptions)) {
    if (!seen.has(id)) throw new Error(`conformance: exceptions.yaml names unknown scenario ${id}`);
  }
  const scenarios = files.flatMap((f) => f.doc.scenarios).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { files, exceptions, scenarios };
}

// checkScenario rejects a scenario that asserts nothing (Scenario.check).
function checkScenario(s) {
  const fail = (m) => {
    throw new Error(`conformance: ${s.id}: ${m}`);
  };
  if (!s.behaviour) fail("no behaviour: say which rule of BEHAVIOUR.md it checks");
  if (!Array.isArray(s.steps) || s.steps.length === 0) fail("no steps");
  if (!s.final || !Array.isArray(s.final.events)) fail("no final.events: every scenario states the events it emits ([] for none)");
  s.steps.forEach((st, i) => {
    const x = st.expect;
    if (st.op && st.world) fail(`step ${i}: an operation or a world action, not both`);
    if (!st.op && !st.world) fail(`step ${i}: neither an operation nor a world action`);
    if (st.op && !x) fail(`step ${i} (${st.op}): no expect`);
    if (x?.host_error && (x.error !== undefined || x.result !== undefined)) fail(`step ${i} (${st.op}): a host error has no result or error object`);
    if (x && x.error !== undefined && x.result !== undefined) fail(`step ${i} (${st.op}): expects both a result and an error`);
  });
}

// --- one scenario ---------------------------------------------------------------------------

const engines = new Map();

async function engineFor(data, onDecide) {
  const key = canonical(data);
  if (!engines.has(key)) engines.set(key, { id: engines.size, engine: await newEngine(data) });
  const e = engines.get(key);
  e.engine.onDecide = onDecide ? (q, d) => onDecide(e.id, data, q, d) : null;
  return e.engine;
}

const byteLen = (s) => Buffer.byteLength(s, "utf8");

class Runner {
  constructor(s, engine, catalog, hooks) {
    this.s = s;
    this.ws = s.worldSpec;
    this.engine = engine;
    this.catalog = catalog;
    this.hooks = hooks;
    this.world = new World(this.ws.clock || DEFAULT_CLOCK);
    this.service = DEFAULT_SERVICE;
    this.caps = this.world.capabilities((id) => {
      const c = catalog.connectors[id];
      return c ? { ...c, id } : undefined;
    }, this.service);
    this.procs = new Map();
    this.secrets = new Set();
    this.users = new Set();
    this.texts = [];
    this.failures = [];
  }

  failf(m) {
    this.failures.push(m);
  }

  secret(v) {
    if (typeof v === "string" && byteLen(v) >= 6) this.secrets.add(v);
  }

  setKeyring(user, value) {
    this.users.add(user);
    this.caps.keyring.set(this.service, user, value);
  }

  deleteKeyring(user) {
    this.users.add(user);
    this.caps.keyring.delete(this.service, user);
  }

  writeLedger(name, doc) {
    const { version: v } = this.caps.ledgers.read(name);
    this.caps.ledgers.write(name, doc, v);
  }

  process(name = "A") {
    if (!this.procs.has(name)) {
      const h = new Host(this.caps);
      h.trace = (line) => {
        this.texts.push(line);
        this.hooks.trace?.(name, line);
      };
      this.procs.set(name, h);
    }
    return this.procs.get(name);
  }

  stage() {
    const ws = this.ws;
    if (ws.mcp_env && Object.keys(ws.mcp_env).length > 0) {
      const servers = {};
      for (const c of sortedKeys(ws.mcp_env)) {
        const env = {};
        for (const k of sortedKeys(ws.mcp_env[c])) {
          const user = mcpUser(c, k);
          this.setKeyring(user, ws.mcp_env[c][k]);
          this.secret(ws.mcp_env[c][k]);
          env[k] = { $keyring: `${this.service}:${user}` };
        }
        const spec = this.catalog.connectors[c] ?? {};
        servers[c] = { command: spec.command ?? "", args: spec.args ?? [], env };
      }
      this.writeLedger("mcp_servers", goIndent({ mcpServers: servers }) + "\n");
    }
    for (const name of sortedKeys(ws.ledgers ?? {})) this.writeLedger(name, goIndent(ws.ledgers[name]));
    for (const name of sortedKeys(ws.raw_ledgers ?? {})) this.writeLedger(name, ws.raw_ledgers[name]);
    const ts = ws.token_server;
    if (ts) {
      this.world.server.configure(ts.rotate !== false, ts.expires_in || 3600);
      for (const p of sortedKeys(ts.issued ?? {})) {
        for (const rt of ts.issued[p]) {
          this.secret(rt);
          this.world.server.issue(p, rt);
        }
      }
    }
    this.act({ set_connections: ws.connections, set_clients: ws.clients, hold: ws.locks, set_agents: ws.agents });
    for (const k of sortedKeys(ws.env ?? {})) this.world.env.set(k, ws.env[k]);
    if (ts) this.act({ script_refresh: ts.refresh, script_authorize: ts.authorize });
    for (const p of sortedKeys(ws.cached_clients ?? {})) {
      const c = ws.cached_clients[p];
      this.process("A").setCachedClient(p, {
        found: true,
        client_id_hash: clientIDHash(c.client_id ?? ""),
        tenant: c.tenant ?? null,
        has_secret: (c.client_secret ?? "") !== "",
        source: "keyring",
        version: version(c.blob ?? encodeClient(c)),
      });
    }
    this.act({ keyring_failures: ws.keyring_failures });
  }

  encodeConnection(p, c) {
    if (typeof c.blob === "string") return c.blob;
    return encodeConnection({
      account_email: c.account || "user@example.com",
      client_id_hash: c.client_id_hash || clientIDHash(c.client_id ?? ""),
      connected_at: (c.connected_at_ms || this.world.nowMS - 86_400_000) / 1000,
      refresh_token: c.refresh_token || `rt-${p}-staged`,
      scopes: c.scopes ?? [],
      tenant: c.tenant ?? null,
      account_type: c.account_type ?? null,
    });
  }

  // act applies a world action (staging uses it too).
  act(a) {
    if (a.advance_ms) this.world.advance(a.advance_ms);
    const conns = a.set_connections ?? {};
    for (const p of sortedKeys(conns)) {
      const c = conns[p];
      if (c === null) {
        this.deleteKeyring(connectionUser(p));
        continue;
      }
      const blob = this.encodeConnection(p, c);
      this.setKeyring(connectionUser(p), blob);
      let rt = "";
      try {
        const b = JSON.parse(blob);
        if (b !== null && typeof b === "object" && !Array.isArray(b) && typeof b.refresh_token === "string") rt = b.refresh_token;
      } catch {
        // a corrupt blob holds no token
      }
      if (rt !== "") {
        this.secret(rt);
        if (c.live !== false) this.world.server.issue(p, rt);
      }
    }
    const clients = a.set_clients ?? {};
    for (const p of sortedKeys(clients)) {
      const c = clients[p];
      if (c === null) {
        this.deleteKeyring(clientUser(p));
        continue;
      }
      this.secret(c.client_secret);
      this.setKeyring(clientUser(p), typeof c.blob === "string" ? c.blob : encodeClient(c));
    }
    for (const name of sortedKeys(a.set_ledgers ?? {})) this.writeLedger(name, goIndent(a.set_ledgers[name]));
    for (const name of sortedKeys(a.set_raw_ledgers ?? {})) this.writeLedger(name, a.set_raw_ledgers[name]);
    for (const lock of sortedKeys(a.hold ?? {})) this.world.hold(lock, a.hold[lock]);
    for (const lock of a.release ?? []) this.world.release(lock);
    for (const id of sortedKeys(a.set_agents ?? {})) {
      const s = a.set_agents[id];
      this.world.agents.set(id, { id, name: s.name, required_connectors: s.required_connectors, consumes_mcp_servers: s.consumes_mcp_servers === true });
    }
    for (const p of sortedKeys(a.script_refresh ?? {})) {
      for (const x of a.script_refresh[p]) {
        this.secret(x.access_token);
        this.secret(x.refresh_token);
        let during = null;
        if (x.during) {
          const act = x.during;
          during = () => {
            try {
              this.act(act);
            } catch (e) {
              this.failf(`during a refresh: ${e.message}`);
            }
          };
        }
        this.world.server.script(p, { status: x.status, error: x.error, access_token: x.access_token, refresh_token: x.refresh_token, expires_in: x.expires_in }, during);
      }
    }
    for (const p of sortedKeys(a.script_authorize ?? {})) {
      for (const x of a.script_authorize[p]) {
        this.secret(x.access_token);
        this.secret(x.refresh_token);
        this.world.server.scriptAuthorize(p, {
          status: x.status,
          token: { status: x.http_status ?? 0, error: x.error, access_token: x.access_token, refresh_token: x.refresh_token, expires_in: x.expires_in, scopes: x.scopes, account: x.account },
        });
      }
    }
    for (const f of a.keyring_failures ?? []) {
      this.users.add(f.user);
      const err = f.insecure
        ? () => new CoreError("INSECURE_STORE", "install and unlock a Secret Service provider (gnome-keyring or KeePassXC)",
          "no secure credential store is available (node memworld: injected); grantwire never falls back to a file")
        : () => new InjectedFailure();
      this.world.failKeyring(f.op, f.user, f.count || 1, err);
    }
  }

  // expand replaces "{{path:<ledger>}}" in the expectation with this shell's ledger path.
  expand(x) {
    let s = JSON.stringify(x);
    for (const name of LEDGERS) {
      s = s.replaceAll(`{{path:${name}}}`, JSON.stringify(this.caps.ledgers.path(name)).slice(1, -1));
    }
    return JSON.parse(s);
  }

  step(i, st) {
    for (const v of Object.values(st.secrets ?? {})) this.secret(v);
    if (st.op === "configure_mcp") {
      for (const k of Object.keys(st.secrets ?? {})) {
        if (k.startsWith("env.")) this.users.add(mcpUser(st.args?.connector ?? "", k.slice(4)));
      }
    }
    const where = `step ${i} (${st.op})`;
    let out, err;
    try {
      out = run(this.engine, this.process(st.process || "A"), st.op, st.args ?? {}, st.secrets ?? {});
    } catch (e) {
      err = e;
    }
    const x = this.expand(st.expect);
    if (x.host_error) {
      if (!err && out.error !== undefined) this.failf(`${where}: expected a host failure ${JSON.stringify(x.host_error)}, got the decision error ${goJSON(out.error)}`);
      else if (!err) this.failf(`${where}: expected a host failure ${JSON.stringify(x.host_error)}, got result ${canonical(out.result)}`);
      else if (!err.message.includes(x.host_error)) this.failf(`${where}: host failure ${JSON.stringify(err.message)} does not contain ${JSON.stringify(x.host_error)}`);
      if (err) this.texts.push(err.message);
      return;
    }
    if (err) {
      this.failf(`${where}: the driver failed: ${err.stack ?? err}`);
      return;
    }
    let body;
    if (out.error !== undefined) {
      body = goJSON(out.error);
      if (x.error === undefined) {
        this.failf(`${where}: unexpected error ${body}`);
        return;
      }
      if (x.error_exact) this.equal(`${where}: error`, x.error, out.error);
      else this.subset(`${where}: error`, x.error, out.error);
      const info = this.engine.manifest.errors?.[out.error.code];
      if (!info) this.failf(`${where}: error code ${out.error.code} is not in the policy's error table`);
      if (x.status && info?.status !== x.status) this.failf(`${where}: ${out.error.code} has REST status ${info?.status}, want ${x.status}`);
      if (x.exit && info?.exit !== x.exit) this.failf(`${where}: ${out.error.code} has CLI exit ${info?.exit}, want ${x.exit}`);
    } else {
      body = canonical(out.result);
      if (x.error !== undefined) {
        this.failf(`${where}: expected error ${goJSON(x.error)}, got result ${body}`);
        return;
      }
      if (x.result !== undefined) this.subset(`${where}: result`, x.result, out.result);
      this.resolveAll(out);
    }
    this.texts.push(body);
    for (const s of x.contains ?? []) if (!body.includes(s)) this.failf(`${where}: ${body} does not contain ${JSON.stringify(s)}`);
    for (const s of x.excludes ?? []) if (body.includes(s)) this.failf(`${where}: ${body} contains ${JSON.stringify(s)}`);
    for (const [path, want] of Object.entries(x.resolved ?? {})) {
      let v = out.error ?? out.result;
      for (const part of path.split(".")) v = v !== null && typeof v === "object" && !Array.isArray(v) ? v[part] : undefined;
      if (v === null || typeof v !== "object" || typeof v.$ref !== "string" || v.$ref === "") {
        this.failf(`${where}: result ${body} has no secret reference at ${path}`);
        continue;
      }
      const got = out.secret(v.$ref);
      if (got !== want) this.failf(`${where}: ${path} resolves to ${JSON.stringify(got ?? "")}, want ${JSON.stringify(want)}`);
    }
    if (x.rounds !== undefined && out.rounds !== x.rounds) this.failf(`${where}: took ${out.rounds} rounds, want ${x.rounds}`);
  }

  // resolveAll resolves every secret reference of a result, so the values are checked for leaks.
  resolveAll(out) {
    const walk = (v) => {
      if (Array.isArray(v)) return v.forEach(walk);
      if (v === null || typeof v !== "object") return;
      if (typeof v.$ref === "string" && Object.keys(v).length === 1) {
        const s = out.secret(v.$ref);
        if (s !== undefined) this.secret(s);
        else this.failf(`result reference ${JSON.stringify(v.$ref)} does not resolve`);
        return;
      }
      Object.values(v).forEach(walk);
    };
    walk(out.result);
  }

  final() {
    const f = this.s.final;
    for (const name of LEDGERS) {
      const { doc } = this.caps.ledgers.read(name);
      this.texts.push(doc ?? "");
      if (f.ledgers && name in f.ledgers) {
        const want = f.ledgers[name];
        if (want === null && doc !== null) this.failf(`final: ledger ${name} exists: ${doc}`);
        else if (want !== null && doc === null) this.failf(`final: ledger ${name} is absent, want ${goJSON(want)}`);
        else if (want !== null) {
          let got;
          try {
            got = JSON.parse(doc);
          } catch (e) {
            this.failf(`final: ledger ${name}: malformed JSON (${e.message})`);
            continue;
          }
          this.equal(`final: ledger ${name}`, want, got);
        }
      }
      if (f.raw_ledgers && name in f.raw_ledgers && (doc ?? "") !== f.raw_ledgers[name]) {
        this.failf(`final: ledger ${name} is ${JSON.stringify(doc ?? "")}, want exactly ${JSON.stringify(f.raw_ledgers[name])}`);
      }
    }
    for (const p of sortedKeys(f.connections ?? {})) this.blob("connection", connectionUser(p), f.connections[p]);
    for (const p of sortedKeys(f.clients ?? {})) this.blob("client", clientUser(p), f.clients[p]);
    for (const u of sortedKeys(f.keyring_values ?? {})) {
      this.users.add(u);
      let got, err;
      try {
        got = this.caps.keyring.get(this.service, u);
      } catch (e) {
        err = e;
      }
      if (err || got !== f.keyring_values[u]) this.failf(`final: keyring ${u} = ${JSON.stringify(got ?? "")} (${err?.message ?? "<nil>"}), want the value staged`);
    }
    // Every stored refresh token is a secret too (tokens issued during the steps).
    for (const id of sortedKeys(this.catalog.connectors)) {
      this.users.add(connectionUser(id));
      this.users.add(clientUser(id));
      try {
        const b = JSON.parse(this.caps.keyring.get(this.service, connectionUser(id)));
        if (b && typeof b.refresh_token === "string") this.secret(b.refresh_token);
      } catch {
        // absent or not a connection
      }
    }
    if (f.keyring !== undefined && f.keyring !== null) {
      for (const u of f.keyring) this.users.add(u);
      const have = this.world.keyringUsers(this.service).sort();
      const want = [...f.keyring].sort();
      if (!deepEqual(have, want)) this.failf(`final: keyring holds ${goJSON(have)}, want ${goJSON(want)}`);
    }
    if (f.token_server?.requests !== undefined && this.world.server.requests !== f.token_server.requests) {
      this.failf(`final: the token endpoint got ${this.world.server.requests} refresh requests, want ${f.token_server.requests}`);
    }
    const got = this.world.events.map((e) => ({ type: e.type, payload: e.payload }));
    this.texts.push(goJSON(got));
    this.equal("final: events", f.events, got);
    this.leaks();
  }

  blob(what, user, want) {
    this.users.add(user);
    let got;
    try {
      got = this.caps.keyring.get(this.service, user);
    } catch (e) {
      if (!(e instanceof KeyringNotFound)) {
        this.failf(`final: ${what} ${user}: ${e.message}`);
        return;
      }
    }
    if (want === null) {
      if (got !== undefined) this.failf(`final: ${what} ${user} exists, want none`);
      return;
    }
    if (got === undefined) {
      this.failf(`final: no ${what} ${user}, want ${goJSON(want)}`);
      return;
    }
    const w = { ...want };
    if (what === "connection" && typeof w.client_id === "string") {
      w.client_id_hash = clientIDHash(w.client_id);
      delete w.client_id;
    }
    let g;
    try {
      g = JSON.parse(got);
    } catch (e) {
      this.failf(`final: ${what} ${user}: malformed JSON (${e.message})`);
      return;
    }
    this.subset(`final: ${what} ${user}`, w, g);
  }

  // leaks fails the scenario if a secret appears in a result, an error, an event, a ledger
  // file, a host failure or a host-call transcript.
  leaks() {
    for (const s of this.secrets) {
      const text = this.texts.find((t) => t.includes(s));
      if (text !== undefined) this.failf(`secret leaked: ${JSON.stringify(s)} appears in ${text.slice(0, 200)}`);
    }
  }

  equal(where, want, got) {
    if (!deepEqual(want, got)) this.failf(`${where}:\n got  ${goJSON(got)}\n want ${goJSON(want)}`);
  }

  subset(where, want, got) {
    const m = subset(want, got);
    if (m) this.failf(`${where}: ${m}\n got  ${goJSON(got)}\n want ${goJSON(want)}`);
  }
}

/** Runs one scenario; returns {failures, transcript}. */
export async function runScenario(s, { onDecide } = {}) {
  const catalog = mergePatch(defaultCatalog(), s.worldSpec.catalog);
  if (!catalog.connectors || Object.keys(catalog.connectors).length === 0) throw new Error(`${s.id}: catalog: no connectors`);
  const engine = await engineFor(policyData(catalog), onDecide && ((id, data, q, d) => onDecide(s.id, id, data, q, d)));
  let transcript = `# ${s.id} (${MODULE})\n# ${s.behaviour}\n`;
  const r = new Runner(s, engine, catalog, { trace: (_p, line) => (transcript += line + "\n") });
  r.stage();
  s.steps.forEach((st, i) => {
    if (st.world) {
      transcript += `\n--- step ${i}: world action\n`;
      r.act(st.world);
      return;
    }
    transcript += `\n--- step ${i}: ${st.op} ${st.args === undefined ? "" : goJSON(st.args)} (process ${st.process || "A"})\n`;
    r.step(i, st);
  });
  r.final();
  return { failures: r.failures, transcript };
}

// --- main -----------------------------------------------------------------------------------

function flag(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main() {
  const started = performance.now();
  const corpusDir = flag("--corpus") ?? REPO + "conformance/corpus";
  const goldenDir = REPO + "conformance/testdata";
  const only = flag("--only");
  const quiet = process.argv.includes("--quiet");
  const corpus = loadCorpus(corpusDir);
  if (corpus.scenarios.length === 0) throw new Error("conformance: the corpus is empty");
  const goldens = new Map(
    (existsSync(goldenDir) ? readdirSync(goldenDir) : [])
      .filter((n) => n.endsWith(".golden"))
      .map((n) => [n.slice(0, -".golden".length).replace("__", "/"), `${goldenDir}/${n}`]),
  );
  for (const id of goldens.keys()) {
    if (!corpus.scenarios.some((s) => s.id === id)) throw new Error(`golden transcript ${id} names no scenario`);
  }

  const queriesPath = flag("--queries");
  const qfd = queriesPath ? openSync(queriesPath, "w") : null;
  const dataSeen = new Set();
  const onDecide = qfd === null ? undefined : (scenario, dataID, data, query, decision) => {
    if (!dataSeen.has(dataID)) {
      dataSeen.add(dataID);
      writeSync(qfd, JSON.stringify({ data_id: dataID, scenario, data }) + "\n");
    }
    writeSync(qfd, JSON.stringify({ scenario, data_id: dataID, query, decision }) + "\n");
  };

  const results = [];
  const families = new Map(corpus.files.map((f) => [f.family, { passed: 0, failed: 0, known: 0 }]));
  for (const s of corpus.scenarios) {
    if (only && !s.id.includes(only)) continue;
    const t0 = performance.now();
    let failures;
    let transcript = "";
    try {
      ({ failures, transcript } = await runScenario(s, { onDecide }));
    } catch (e) {
      failures = [`the scenario could not run: ${e.stack ?? e}`];
    }
    let golden = false;
    if (goldens.has(s.id)) {
      golden = true;
      const want = readFileSync(goldens.get(s.id), "utf8");
      if (transcript !== want) failures.push(`the host calls differ from ${goldens.get(s.id)}:\n${firstDiff(want, transcript)}`);
    }
    const reason = corpus.exceptions[s.id]?.[SHELL];
    let passed = failures.length === 0;
    let note = "";
    if (reason !== undefined) {
      note = passed ? `known difference on ${SHELL} no longer differs; remove it from exceptions.yaml (${reason})` : `known difference: ${reason}`;
      passed = !passed;
    }
    const fam = families.get(s.family);
    if (passed) fam.passed++;
    else fam.failed++;
    if (reason !== undefined && passed) fam.known++;
    results.push({ id: s.id, family: s.family, passed, failures, exception: reason ?? null, note, golden, ms: performance.now() - t0 });
    if (!passed) {
      console.log(`--- FAIL: ${s.id}`);
      for (const f of failures) console.log("    " + f.replaceAll("\n", "\n    "));
      if (note) console.log("    " + note);
    } else if (!quiet) {
      console.log(`ok   ${s.id}${golden ? " (transcript = golden)" : ""}${reason !== undefined ? ` (known difference: ${reason})` : ""}`);
    }
  }
  if (qfd !== null) closeSync(qfd);
  const ms = performance.now() - started;
  const passed = results.filter((r) => r.passed).length;
  const failed = results.length - passed;
  for (const [family, c] of families) {
    if (c.passed + c.failed > 0) console.log(`family ${family}: ${c.passed} passed, ${c.failed} failed${c.known ? ` (${c.known} known differences)` : ""}`);
  }
  console.log(`conformance on ${SHELL} (node ${process.version}): ${results.length} scenarios in ${(ms / 1000).toFixed(2)} s`);
  console.log(`${passed} passed, ${failed} failed`);

  const reportPath = flag("--report");
  if (reportPath) {
    const report = {
      shell: SHELL,
      node: process.version,
      ms,
      scenarios: results,
      files: corpus.files.map((f) => ({ name: f.name, canonical: canonical(strip(f.doc)) })),
    };
    writeFileSync(reportPath, JSON.stringify(report, null, 1));
  }
  process.exitCode = failed > 0 ? 1 : 0;
}

// strip removes what the loader added to the parsed documents (family, id, merged world).
function strip(doc) {
  return {
    ...doc,
    scenarios: doc.scenarios.map(({ family: _f, id: _i, worldSpec: _w, ...s }) => s),
  };
}

function firstDiff(want, got) {
  const w = want.split("\n");
  const g = got.split("\n");
  for (let i = 0; i < Math.max(w.length, g.length); i++) {
    if (w[i] !== g[i]) return `line ${i + 1}:\n want ${w[i] ?? ""}\n got  ${g[i] ?? ""}`;
  }
  return "(equal)";
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e.stack ?? e);
    process.exitCode = 2;
  });
}
