#!/usr/bin/env node
// Runs grantwire's conformance corpus (conformance/corpus/*.yaml) on the Node shell:
// policy.wasm through @open-policy-agent/opa-wasm, the JavaScript driver and host, and the
// in-memory world (memworld.mjs) whose authorization server is the Go test worlds' one,
// reached over HTTP. Every expectation is checked as the Go runner
// (conformance/run.go, stage.go, step.go, final.go) checks it, and the world is staged in
// the same order, so the Node host answers every need as the Go host does. A scenario listed
// for this shell in exceptions.yaml must fail, so a fixed difference is noticed. First, the
// host's JSON reader is checked against hostabi/testdata/stored-json.json, and the kinds no
// scenario uses are exercised (checkBeyond).
//
//   node run.mjs [--authserver URL] [--report FILE] [--queries FILE] [--only SUBSTRING] [--quiet]
//
// --authserver is the control API of the test worlds' one authorization server
// (internal/testworld/authserver: `go run ./internal/cmd/authserver -worlds` prints it);
// without it the run builds and starts one, and stops it at the end.
// --report writes a JSON report (per scenario: family, failures; per corpus file: its
// canonical JSON, to compare the YAML reading with Go's); --queries writes every query sent
// to the core with the canonical decision the loader returned (JSON lines), for the Go test
// to replay through both Go engines and to compare with the Go host's questions. Exit
// status 1 when any scenario fails.

import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { crc32 } from "node:zlib";
import { parse as parseYAML } from "yaml";
import { Canceled, run } from "./driver.mjs";
import { REPO, newEngine } from "./engine.mjs";
import { Host } from "./host.mjs";
import { Num, encode, parse } from "./json.mjs";
import { World } from "./memworld.mjs";

export const SHELL = "node/opa-wasm";
const DEFAULT_CLOCK = 1_790_000_000_000;
const SERVICE = "grantwire.connections";
const LEDGERS = { grants: "connectors/grants.json", activations: "connectors/activations.json", state: "connectors/state.json", mcp_servers: "mcp_servers.json", agents: "agents.json" };
const connectionUser = (p) => `${p}:default`;
const clientUser = (p) => `provider:${p}`;
const tokenUser = (p) => `${p}:access_token`;
const clientIDHash = (id) => crc32(id).toString(16).padStart(8, "0");
const sortedKeys = (o) => Object.keys(o ?? {}).sort();
const byteLen = (s) => Buffer.byteLength(s, "utf8");

// --- JSON for the runner: grantwire's canonical JSON (internal/jsonx) of decisions, and
// what Go's encoding/json writes (keyring blobs staged as the Go runner stages them). ----

const canonString = (s) => '"' + s.replace(/["\\\u0000-\u001f]/g, (c) => ({ '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" })[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) + '"';
const byBytes = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
/** grantwire's canonical JSON of a JSON value (internal/jsonx). */
export function canonical(v) {
  if (v === null || typeof v !== "object") return typeof v === "string" ? canonString(v) : JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  return "{" + Object.keys(v).sort(byBytes).map((k) => canonString(k) + ":" + canonical(v[k])).join(",") + "}";
}
/** json.Marshal of a Go struct: members in declaration (insertion) order, HTML characters escaped. */
const goJSON = (v) => `{${Object.entries(v).map(([k, x]) => `${encode(k)}:${encode(x)}`).join(",")}}`.replace(/[<>&]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);

function deepEqual(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object" || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

/** conformance.Subset: "" when want is a subset of got, else where it is not. */
function subset(want, got, path = "") {
  const at = path || ".";
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return `at ${at}: got ${JSON.stringify(got)}, want ${want.length} elements like ${JSON.stringify(want)}`;
    for (let i = 0; i < want.length; i++) {
      const m = subset(want[i], got[i], `${path}[${i}]`);
      if (m) return m;
    }
    return "";
  }
  if (want === null || typeof want !== "object") return deepEqual(want, got) ? "" : `at ${at}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;
  if (got === null || typeof got !== "object" || Array.isArray(got)) return `at ${at}: got ${JSON.stringify(got)}, want an object`;
  for (const k of sortedKeys(want)) {
    if (!Object.hasOwn(got, k)) return `at ${at}: missing ${JSON.stringify(k)}`;
    const m = subset(want[k], got[k], `${path}.${k}`);
    if (m) return m;
  }
  return "";
}

/** A JSON merge patch (RFC 7386). */
function mergePatch(doc, patch) {
  if (patch === undefined) return doc ?? {};
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out = doc !== null && typeof doc === "object" && !Array.isArray(doc) ? { ...doc } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

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
  if (!s.behaviour) fail("no behaviour: say which rule of docs/behaviour.md it checks");
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

export class Runner {
  // open returns a runner on a fresh world, whose authorization server (a world of the
  // control API at hub) plays the catalog's OAuth providers.
  static async open(hub, s, engine, catalog, trace) {
    const r = new Runner(s, engine, catalog, trace, await World.open(hub, s.worldSpec.clock || DEFAULT_CLOCK));
    await r.world.server.script({ providers: catalog.connectors });
    return r;
  }

  constructor(s, engine, catalog, trace, world) {
    Object.assign(this, { s, ws: s.worldSpec, engine, catalog, trace, world, caps: world.capabilities(SERVICE) });
    Object.assign(this, { procs: new Map(), agents: {}, secrets: new Set(), users: new Set(), texts: [], failures: [], durings: [] });
    world.server.onDuring = (id) => this.durings[Number(id)]();
  }

  failf(m) {
    this.failures.push(m);
  }

  secret(v) {
    if (typeof v === "string" && byteLen(v) >= 6) this.secrets.add(v);
  }

  setKeyring(user, value) {
    this.users.add(user);
    this.caps.keyring.set(SERVICE, user, value);
  }

  deleteKeyring(user) {
    this.users.add(user);
    this.caps.keyring.delete(SERVICE, user);
  }

  // writeLedger writes a ledger byte for byte, as another process would.
  writeLedger(name, text) {
    this.caps.files.update(LEDGERS[name], () => Buffer.from(text));
  }

  process(name = "A") {
    if (!this.procs.has(name)) {
      const h = new Host(this.caps);
      h.trace = (line) => {
        this.texts.push(line);
        this.trace(line);
      };
      this.procs.set(name, h);
    }
    return this.procs.get(name);
  }

  // stage builds the initial world in the order of the Go runner's stage().
  async stage() {
    const ws = this.ws;
    if (sortedKeys(ws.mcp_env).length > 0) {
      const servers = {};
      for (const c of sortedKeys(ws.mcp_env)) {
        const env = {};
        for (const k of sortedKeys(ws.mcp_env[c])) {
          const user = `${c}:${k}`;
          this.setKeyring(user, ws.mcp_env[c][k]);
          this.secret(ws.mcp_env[c][k]);
          env[k] = { $keyring: `${SERVICE}:${user}` };
        }
        const spec = this.catalog.connectors[c] ?? {};
        servers[c] = { command: spec.command ?? "", args: spec.args ?? [], env };
      }
      this.writeLedger("mcp_servers", encode({ mcpServers: servers }, "  ") + "\n");
    }
    for (const name of sortedKeys(ws.ledgers)) this.writeLedger(name, encode(ws.ledgers[name], "  ") + "\n");
    for (const name of sortedKeys(ws.raw_ledgers)) this.writeLedger(name, ws.raw_ledgers[name]);
    const ts = ws.token_server;
    if (ts) {
      for (const p of sortedKeys(ts.issued)) ts.issued[p].forEach((rt) => this.secret(rt));
      const { rotate, expires_in, client_auth, revoke, issued } = ts;
      await this.world.server.script({ rotate: rotate !== false, expires_in: expires_in || 3600, client_auth, revoke, issued });
    }
    await this.act({ set_connections: ws.connections, set_clients: ws.clients, hold: ws.locks, set_agents: ws.agents });
    for (const k of sortedKeys(ws.env)) this.world.env.set(k, ws.env[k]);
    if (ts) await this.act({ script_refresh: ts.refresh, script_authorize: ts.authorize });
    for (const p of sortedKeys(ws.cached_clients)) {
      this.process("A").memory.set(clientUser(p), { value: encodeClient(ws.cached_clients[p]), found: true });
    }
    await this.act({ keyring_failures: ws.keyring_failures });
  }

  encodeConnection(p, c) {
    if (typeof c.blob === "string") return c.blob;
    const at = c.connected_at_ms || this.world.nowMS - 86_400_000;
    return goJSON({
      account_email: c.account || "user@example.com",
      client_id_hash: c.client_id_hash || clientIDHash(c.client_id ?? ""),
      connected_at: new Num(`${Math.trunc(at / 1000)}.${String(at % 1000).padStart(3, "0")}`),
      refresh_token: c.refresh_token || `rt-${p}-staged`,
      scopes: c.scopes ?? [],
      ...(c.tenant != null && { tenant: c.tenant }),
      ...(c.account_type != null && { account_type: c.account_type }),
    });
  }

  // agentsFile renders the world's agents as agents.json (the Go runner's agentsFile).
  agentsFile() {
    const agents = sortedKeys(this.agents).map((id) => {
      const s = this.agents[id];
      const reqs = sortedKeys(s.required_connectors).map((c) => ({ connector: c, scopes: s.required_connectors[c] }));
      return { id, ...(s.name && { name: s.name }), ...(s.consumes_mcp_servers && { consumes_mcp_servers: true }), ...(reqs.length && { required_connectors: reqs }) };
    });
    return encode({ version: 1, agents }, "  ") + "\n";
  }

  // act applies a world action (staging uses it too), in the order of the Go runner's act();
  // what it tells the authorization server goes in one piece of script, at the end.
  async act(a) {
    const script = { issued: {}, refresh: {}, authorize: {} };
    const queue = (m, p, x) => (m[p] ??= []).push(x);
    if (a.advance_ms) this.world.nowMS += a.advance_ms;
    for (const p of sortedKeys(a.set_connections)) {
      const c = a.set_connections[p];
      if (c === null) {
        this.deleteKeyring(connectionUser(p));
        continue;
      }
      const blob = this.encodeConnection(p, c);
      this.setKeyring(connectionUser(p), blob);
      let rt = "";
      try {
        rt = JSON.parse(blob).refresh_token ?? "";
      } catch {
        // a corrupt blob holds no token
      }
      if (typeof rt === "string" && rt !== "") {
        this.secret(rt);
        if (c.live !== false) queue(script.issued, p, rt);
      }
    }
    for (const p of sortedKeys(a.set_clients)) {
      const c = a.set_clients[p];
      if (c === null) {
        this.deleteKeyring(clientUser(p));
        continue;
      }
      this.secret(c.client_secret);
      this.setKeyring(clientUser(p), encodeClient(c));
    }
    for (const name of sortedKeys(a.set_ledgers)) this.writeLedger(name, encode(a.set_ledgers[name], "  ") + "\n");
    for (const name of sortedKeys(a.set_raw_ledgers)) this.writeLedger(name, a.set_raw_ledgers[name]);
    for (const lock of sortedKeys(a.hold)) this.world.holders.set(lock, a.hold[lock]);
    for (const lock of a.release ?? []) this.world.holders.delete(lock);
    if (sortedKeys(a.set_agents).length > 0) {
      Object.assign(this.agents, a.set_agents);
      this.writeLedger("agents", this.agentsFile());
    }
    for (const p of sortedKeys(a.script_refresh)) {
      for (const x of a.script_refresh[p]) {
        this.secret(x.access_token);
        this.secret(x.refresh_token);
        const { during, ...answer } = x;
        if (during) {
          answer.during = String(this.durings.length);
          this.durings.push(() => this.act(during).catch((e) => this.failf(`during a refresh: ${e.message}`)));
        }
        queue(script.refresh, p, answer);
      }
    }
    for (const p of sortedKeys(a.script_authorize)) {
      for (const x of a.script_authorize[p]) {
        this.secret(x.access_token);
        this.secret(x.refresh_token);
        queue(script.authorize, p, x);
      }
    }
    for (const f of a.keyring_failures ?? []) {
      this.users.add(f.user);
      this.world.failKeyring(f.op, f.user, f.count, f.insecure);
    }
    if (Object.values(script).some((m) => sortedKeys(m).length > 0)) await this.world.server.script(script);
  }

  // expand replaces "{{path:<ledger>}}" in the expectation with this shell's ledger path.
  expand(x) {
    let s = JSON.stringify(x);
    for (const name of sortedKeys(LEDGERS)) s = s.replaceAll(`{{path:${name}}}`, JSON.stringify(this.caps.files.path(LEDGERS[name])).slice(1, -1));
    return JSON.parse(s);
  }

  async step(i, st) {
    for (const v of Object.values(st.secrets ?? {})) this.secret(v);
    if (st.op === "configure_mcp") {
      for (const k of Object.keys(st.secrets ?? {})) if (k.startsWith("env.")) this.users.add(`${st.args?.connector ?? ""}:${k.slice(4)}`);
    }
    const where = `step ${i} (${st.op})`;
    let out;
    try {
      out = await run(this.engine, this.process(st.process || "A"), st.op, st.args ?? {}, st.secrets ?? {});
    } catch (e) {
      return this.failf(`${where}: the driver failed: ${e.stack ?? e}`);
    }
    const x = this.expand(st.expect);
    if (x.host_error) {
      if (out.error === undefined) this.failf(`${where}: expected a host failure ${JSON.stringify(x.host_error)}, got result ${canonical(out.result)}`);
      else if (!out.hostFailure) this.failf(`${where}: expected a host failure ${JSON.stringify(x.host_error)}, got the decision error ${JSON.stringify(out.error)}`);
      else if (!out.error.message.includes(x.host_error)) this.failf(`${where}: host failure ${JSON.stringify(out.error.message)} does not contain ${JSON.stringify(x.host_error)}`);
      if (out.error !== undefined) this.texts.push(out.error.message);
      return;
    }
    let body;
    if (out.error !== undefined) {
      body = JSON.stringify(out.error);
      if (x.error === undefined) return this.failf(`${where}: unexpected error ${body}`);
      if (x.error_exact) this.equal(`${where}: error`, x.error, out.error);
      else this.subset(`${where}: error`, x.error, out.error);
      const info = this.engine.manifest.errors?.[out.error.code];
      if (!info) this.failf(`${where}: error code ${out.error.code} is not in the policy's error table`);
      if (x.status && info?.status !== x.status) this.failf(`${where}: ${out.error.code} has REST status ${info?.status}, want ${x.status}`);
      if (x.exit && info?.exit !== x.exit) this.failf(`${where}: ${out.error.code} has CLI exit ${info?.exit}, want ${x.exit}`);
    } else {
      body = canonical(out.result);
      if (x.error !== undefined) return this.failf(`${where}: expected error ${JSON.stringify(x.error)}, got result ${body}`);
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

  keyringGet(user) {
    this.users.add(user);
    return this.world.keyringMap.get(SERVICE + "\0" + user);
  }

  async final() {
    const f = this.s.final;
    for (const name of ["grants", "activations", "state", "mcp_servers"]) {
      const bytes = this.world.files.get(LEDGERS[name]);
      const doc = bytes === undefined ? null : bytes.toString();
      this.texts.push(doc ?? "");
      if (f.ledgers && name in f.ledgers) {
        const want = f.ledgers[name];
        if (want === null && doc !== null) this.failf(`final: ledger ${name} exists: ${doc}`);
        else if (want !== null && doc === null) this.failf(`final: ledger ${name} is absent, want ${JSON.stringify(want)}`);
        else if (want !== null) {
          try {
            this.equal(`final: ledger ${name}`, want, JSON.parse(doc));
          } catch (e) {
            this.failf(`final: ledger ${name}: malformed JSON (${e.message})`);
          }
        }
      }
      if (f.raw_ledgers && name in f.raw_ledgers && (doc ?? "") !== f.raw_ledgers[name]) {
        this.failf(`final: ledger ${name} is ${JSON.stringify(doc ?? "")}, want exactly ${JSON.stringify(f.raw_ledgers[name])}`);
      }
    }
    for (const [what, user, wants] of [["connection", connectionUser, f.connections], ["client", clientUser, f.clients]]) {
      for (const p of sortedKeys(wants)) this.blob(what, user(p), wants[p]);
    }
    for (const u of sortedKeys(f.keyring_values)) {
      const got = this.keyringGet(u);
      if (got !== f.keyring_values[u]) this.failf(`final: keyring ${u} = ${JSON.stringify(got ?? "")}, want the value staged`);
    }
    // Every stored token is a secret too (tokens issued during the steps).
    for (const id of sortedKeys(this.catalog.connectors)) {
      this.users.add(clientUser(id));
      for (const [user, field] of [[tokenUser(id), "access_token"], [connectionUser(id), "refresh_token"]]) {
        try {
          this.secret(JSON.parse(this.keyringGet(user))[field]);
        } catch {
          // absent or not JSON
        }
      }
    }
    if (Array.isArray(f.keyring)) {
      const have = this.world.keyringUsers(SERVICE).sort();
      const want = [...f.keyring].sort();
      if (!deepEqual(have, want)) this.failf(`final: keyring holds ${JSON.stringify(have)}, want ${JSON.stringify(want)}`);
    }
    const srv = await this.world.server.counters();
    for (const [field, what] of [
      ["requests", "the token endpoint got %d refresh requests"],
      ["exchanges", "the token endpoint got %d code exchanges"],
      ["revocations", "the revocation endpoint got %d requests"],
      ["revoked", "the revocation endpoint revoked %d tokens"],
    ]) {
      const want = f.token_server?.[field];
      if (want !== undefined && srv[field] !== want) this.failf(`final: ${what.replace("%d", srv[field])}, want ${want}`);
    }
    if (f.token_server?.client_auth !== undefined && !deepEqual(srv.client_auth, f.token_server.client_auth)) {
      this.failf(`final: the token endpoint saw the client authenticate with ${JSON.stringify(srv.client_auth)}, want ${JSON.stringify(f.token_server.client_auth)}`);
    }
    const got = this.world.events.map((e) => ({ type: e.type, payload: e.payload }));
    this.texts.push(JSON.stringify(got));
    this.equal("final: events", f.events, got);
    // a secret must appear in no result, error, event, ledger file or host-call transcript
    for (const s of this.secrets) {
      const text = this.texts.find((t) => t.includes(s));
      if (text !== undefined) this.failf(`secret leaked: ${JSON.stringify(s)} appears in ${text.slice(0, 200)}`);
    }
  }

  blob(what, user, want) {
    const got = this.keyringGet(user);
    if (want === null) {
      if (got !== undefined) this.failf(`final: ${what} ${user} exists, want none`);
      return;
    }
    if (got === undefined) return this.failf(`final: no ${what} ${user}, want ${JSON.stringify(want)}`);
    const w = { ...want };
    if (what === "connection" && typeof w.client_id === "string") {
      w.client_id_hash = clientIDHash(w.client_id);
      delete w.client_id;
    }
    try {
      this.subset(`final: ${what} ${user}`, w, JSON.parse(got));
    } catch (e) {
      this.failf(`final: ${what} ${user}: malformed JSON (${e.message})`);
    }
  }

  equal(where, want, got) {
    if (!deepEqual(want, got)) this.failf(`${where}:\n got  ${JSON.stringify(got)}\n want ${JSON.stringify(want)}`);
  }

  subset(where, want, got) {
    const m = subset(want, got);
    if (m) this.failf(`${where}: ${m}\n got  ${JSON.stringify(got)}\n want ${JSON.stringify(want)}`);
  }
}

function encodeClient(c) {
  if (typeof c.blob === "string") return c.blob;
  return goJSON({ client_id: c.client_id ?? "", client_secret: c.client_secret ?? "", ...(c.tenant != null && { tenant: c.tenant }) });
}

/** The catalog every scenario starts from (conformance/corpus/catalog.json). */
export const baseCatalog = () => JSON.parse(readFileSync(REPO + "conformance/corpus/catalog.json", "utf8"));

/** Runs one scenario on a world of the control API at hub; returns {failures, transcript}. */
export async function runScenario(hub, s, { onDecide } = {}) {
  const catalog = mergePatch(baseCatalog(), s.worldSpec.catalog);
  if (sortedKeys(catalog.connectors).length === 0) throw new Error(`${s.id}: catalog: no connectors`);
  const data = { catalog: { connectors: catalog.connectors } };
  const engine = await engineFor(data, onDecide && ((id, d, q, dec) => onDecide(s.id, id, d, q, dec)));
  let transcript = `# ${s.id}\n# ${s.behaviour}\n`;
  const r = await Runner.open(hub, s, engine, catalog, (line) => (transcript += line + "\n"));
  try {
    await r.stage();
    for (const [i, st] of s.steps.entries()) {
      if (st.world) {
        transcript += `\n--- step ${i}: world action\n`;
        await r.act(st.world);
        continue;
      }
      transcript += `\n--- step ${i}: ${st.op} ${JSON.stringify(st.args ?? {})} (process ${st.process || "A"})\n`;
      await r.step(i, st);
    }
    await r.final();
  } finally {
    await r.world.server.close();
  }
  return { failures: r.failures, transcript };
}

// checkStoredJSON reads every case of hostabi/testdata/stored-json.json as the host does (the
// Go host checks the same cases): the reasons and values of ledger.read must be the Go host's.
function checkStoredJSON() {
  const { cases } = JSON.parse(readFileSync(REPO + "hostabi/testdata/stored-json.json", "utf8"));
  const failures = [];
  for (const c of cases) {
    const input = c.in !== undefined ? Buffer.from(c.in) : Buffer.from(c.in_base64, "base64");
    const read = parse(input);
    const got = read.corrupt !== undefined ? { corrupt: read.corrupt } : { value: encode(read.value, "", true) };
    const want = c.corrupt !== undefined ? { corrupt: c.corrupt } : { value: encode(c.value) };
    if (canonical(got) !== canonical(want)) failures.push(`stored JSON ${JSON.stringify(c.in ?? c.in_base64).slice(0, 80)}: got ${canonical(got)}, want ${canonical(want)}`);
  }
  if (cases.length === 0) failures.push("stored-json.json has no case");
  return failures;
}

// checkBeyond runs what no corpus scenario does, as hostabi/schema_test.go does on the Go
// host: disconnect where the catalog names a revocation endpoint (http.send: the refresh
// token is revoked at the provider), agent_id on a source that exists and on one that does
// not (file.digest), and an operation its caller cancelled before it began (nothing written).
async function checkBeyond(hub) {
  const failures = [];
  const catalog = mergePatch(baseCatalog(), { connectors: { google: { revocation_url: "https://oauth2.googleapis.com/revoke" } } });
  const engine = await newEngine({ catalog: { connectors: catalog.connectors } });
  const r = await Runner.open(hub, { worldSpec: {} }, engine, catalog, () => {});
  await r.act({
    set_clients: { google: { client_id: "client-1", client_secret: "google-secret-1" } },
    set_connections: { google: { scopes: ["gmail.readonly"], client_id: "client-1", refresh_token: "rt-google-1" } },
  });
  r.world.sources.set("~/agents/helper.py", Buffer.from("print('hello')\n"));
  const host = r.process("A");
  const expect = (what, ok) => ok || failures.push(`beyond the corpus: ${what}`);
  const canceled = await run(engine, host, "disconnect", { connector: "google" }, {}, AbortSignal.abort()).catch((e) => e);
  expect(`a cancelled disconnect throws Canceled, got ${canceled}`, canceled instanceof Canceled);
  expect("a cancelled disconnect writes nothing", r.keyringGet(connectionUser("google")) !== undefined);
  let out = await run(engine, host, "disconnect", { connector: "google" });
  expect(`disconnect: ${JSON.stringify(out.error)}`, out.error === undefined);
  const { revoked } = await r.world.server.counters();
  expect(`disconnect revokes the refresh token at the provider, revoked ${revoked}`, revoked === 1);
  expect("disconnect deletes the connection", r.keyringGet(connectionUser("google")) === undefined);
  out = await run(engine, host, "agent_id", { source: "~/agents/helper.py", name: "helper" });
  expect(`agent_id of a source: ${canonical(out.result ?? out.error)}`, /^custom:[0-9a-f]{16}:helper$/.test(out.result?.id));
  out = await run(engine, host, "agent_id", { source: "~/agents/missing.py" });
  expect(`agent_id of a missing source: ${canonical(out.result ?? out.error)}`, out.error?.code === "USAGE" && out.error.message.includes("no such file"));
  await r.world.server.close();
  return failures;
}

// --- main -----------------------------------------------------------------------------------

let stopHub = () => {};

// hub is the control API of the test worlds' authorization server: --authserver URL, or one
// this run builds and starts (internal/cmd/authserver -worlds); stop stops what it started.
async function hub() {
  if (flag("--authserver")) return { url: flag("--authserver"), stop() {} };
  const dir = mkdtempSync(join(tmpdir(), "grantwire-node-"));
  execFileSync("go", ["build", "-o", join(dir, "authserver"), "./internal/cmd/authserver"], { cwd: REPO, stdio: "inherit" });
  const child = spawn(join(dir, "authserver"), ["-worlds"], { stdio: ["ignore", "pipe", "inherit"] });
  const stop = () => child.kill() && rmSync(dir, { recursive: true, force: true });
  process.on("exit", stop);
  const lines = createInterface({ input: child.stdout });
  const [line] = await once(lines, "line");
  lines.close();
  child.stdout.destroy();
  return { url: JSON.parse(line).url, stop };
}

function flag(name) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main() {
  const started = performance.now();
  const corpus = loadCorpus(flag("--corpus") ?? REPO + "conformance/corpus");
  if (corpus.scenarios.length === 0) throw new Error("conformance: the corpus is empty");
  const only = flag("--only");
  const quiet = process.argv.includes("--quiet");
  const { url: authserver, stop } = await hub();
  stopHub = stop;
  const checks = [...checkStoredJSON(), ...(await checkBeyond(authserver))];
  for (const f of checks) console.log(`--- FAIL: ${f}`);

  const queriesPath = flag("--queries");
  const qfd = queriesPath ? openSync(queriesPath, "w") : null;
  const dataSeen = new Set();
  const onDecide = qfd === null ? undefined : (scenario, dataID, data, query, decision) => {
    if (!dataSeen.has(dataID)) {
      dataSeen.add(dataID);
      writeSync(qfd, JSON.stringify({ data_id: dataID, scenario, data }) + "\n");
    }
    writeSync(qfd, JSON.stringify({ scenario, data_id: dataID, query, decision: canonical(decision) }) + "\n");
  };

  const results = [];
  const families = new Map(corpus.files.map((f) => [f.family, { passed: 0, failed: 0, known: 0 }]));
  for (const s of corpus.scenarios) {
    if (only && !s.id.includes(only)) continue;
    const t0 = performance.now();
    let failures;
    try {
      ({ failures } = await runScenario(authserver, s, { onDecide }));
    } catch (e) {
      failures = [`the scenario could not run: ${e.stack ?? e}`];
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
    results.push({ id: s.id, family: s.family, passed, failures, exception: reason ?? null, note, ms: performance.now() - t0 });
    if (!passed) {
      console.log(`--- FAIL: ${s.id}`);
      for (const f of failures) console.log("    " + f.replaceAll("\n", "\n    "));
      if (note) console.log("    " + note);
    } else if (!quiet) {
      console.log(`ok   ${s.id}${reason !== undefined ? ` (known difference: ${reason})` : ""}`);
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
    const strip = (doc) => ({ ...doc, scenarios: doc.scenarios.map(({ family: _f, id: _i, worldSpec: _w, ...s }) => s) });
    const report = { shell: SHELL, node: process.version, ms, checks, scenarios: results, files: corpus.files.map((f) => ({ name: f.name, canonical: canonical(strip(f.doc)) })) };
    writeFileSync(reportPath, JSON.stringify(report, null, 1));
  }
  process.exitCode = failed > 0 || checks.length > 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main()
    .catch((e) => {
      console.error(e.stack ?? e);
      process.exitCode = 2;
    })
    .finally(() => stopHub());
}
