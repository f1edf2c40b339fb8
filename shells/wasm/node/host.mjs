// The host adapter of the host ABI in JavaScript (hostabi/README.md): it answers the core's
// needs and applies its effects through a shell's capabilities, with the keyring layout
// shared with GAIA, the ledger formats and their preconditions, transactions, the
// per-process token and client caches, and secret references. It is the counterpart of
// hostabi.Host (host.go, effects.go, ledgers.go, store.go), written from the same contract.
//
// Capabilities (all synchronous here):
//   keyring  {get(service, user) → string (throws KeyringNotFound), set, delete}
//   ledgers  {read(name) → {doc: string|null, version}, write(name, doc, ifVersion), path(name)}
//   locks    {tryLock(name, waitMs) → release function, or null when busy}
//   clock    {now() → Unix ms}
//   events   {emit({type, payload})}
//   agents   {agent(id) → {required_connectors, consumes_mcp_servers} | undefined}
//   oauth    {refresh(connector, client, refreshToken), authorize(connector, client, scopes)}
//   catalog(id) → catalog entry | undefined;  getenv(name) → string;  service

import { createHash } from "node:crypto";
import { Conflict, CoreError, conflict } from "./driver.mjs";
import { canonical, goJSON, goJSONOrdered, ledgerJSON, sortedKeys } from "./json.mjs";

export const DEFAULT_SERVICE = "grantwire.connections";

/** Thrown by a keyring's get when nothing is stored. */
export class KeyringNotFound extends Error {}

// --- keyring layout and digests (store.go) ------------------------------------------------

export const connectionUser = (provider) => `${provider}:default`;
export const clientUser = (provider) => `provider:${provider}`;
export const mcpUser = (connector, key) => `${connector}:${key}`;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE) of the client id as 8 lowercase hex digits (GAIA's client_id_hash). */
export function clientIDHash(clientID) {
  let c = 0xffffffff;
  for (const b of Buffer.from(clientID, "utf8")) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return ((c ^ 0xffffffff) >>> 0).toString(16).padStart(8, "0");
}

const sha256hex = (s) => createHash("sha256").update(s, "utf8").digest("hex");

/** Refers to a secret without revealing it: "sha256:" and 16 hex digits. */
export const digest = (secret) => "sha256:" + sha256hex(secret).slice(0, 16);

/** The version token of a stored blob. */
export const version = (blob) => sha256hex(blob).slice(0, 16);

function envName(provider, what) {
  return `GRANTWIRE_${provider.replace(/[-.]/g, "_").toUpperCase()}_${what}`;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const nonNil = (v) => v ?? [];

function parseJSON(text) {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

// decodeFields decodes a JSON object into typed fields as encoding/json does into a struct:
// null leaves the zero value, a field of the wrong type is skipped and makes the decode fail.
function decodeFields(text, spec) {
  const p = parseJSON(text);
  const out = {};
  for (const [k, kind] of Object.entries(spec)) out[k] = kind === "ptr" ? null : kind === "strings" ? null : kind === "number" ? 0 : "";
  if (!p.ok || (p.value !== null && !isObject(p.value))) return { ok: false, fields: out, raw: {} };
  const raw = p.value ?? {};
  let ok = true;
  for (const [k, kind] of Object.entries(spec)) {
    if (!(k in raw) || raw[k] === null) continue;
    const v = raw[k];
    if ((kind === "string" || kind === "ptr") && typeof v === "string") out[k] = v;
    else if (kind === "number" && typeof v === "number") out[k] = v;
    else if (kind === "strings" && Array.isArray(v) && v.every((s) => s === null || typeof s === "string")) {
      out[k] = v.map((s) => s ?? "");
    } else ok = false;
  }
  return { ok, fields: out, raw };
}

const CONNECTION = {
  account_email: "string",
  client_id_hash: "string",
  connected_at: "number",
  refresh_token: "string",
  scopes: "strings",
  tenant: "ptr",
  account_type: "ptr",
};

/** Decodes a stored connection; ok is false when it is not a valid connection. */
export function parseConnection(blob) {
  if (blob === undefined) return { ok: false, c: decodeFields("null", CONNECTION).fields };
  const d = decodeFields(blob, CONNECTION);
  const valid = d.ok && isObject(d.raw) && d.fields.refresh_token !== "" && "scopes" in d.raw;
  return { ok: valid, c: d.fields };
}

/** The connection blob, in the field order of GAIA's layout (tenant/account_type omitted when null). */
export function encodeConnection(c) {
  const o = {
    account_email: c.account_email,
    client_id_hash: c.client_id_hash,
    connected_at: c.connected_at,
    refresh_token: c.refresh_token,
    scopes: nonNil(c.scopes),
  };
  if (c.tenant !== null && c.tenant !== undefined) o.tenant = c.tenant;
  if (c.account_type !== null && c.account_type !== undefined) o.account_type = c.account_type;
  return goJSONOrdered(o);
}

/** The client blob {client_id, client_secret, tenant?}. */
export function encodeClient(c) {
  const o = { client_id: c.client_id ?? "", client_secret: c.client_secret ?? "" };
  if (c.tenant !== null && c.tenant !== undefined) o.tenant = c.tenant;
  return goJSONOrdered(o);
}

// Go's math.Round: half away from zero.
const connectedAtMS = (c) => {
  const x = c.connected_at * 1000;
  return x < 0 ? -Math.round(-x) : Math.round(x);
};

function connectionFact(c, blob) {
  return {
    found: true,
    valid: true,
    account: c.account_email,
    scopes: nonNil(c.scopes),
    connected_at: connectedAtMS(c),
    client_id_hash: c.client_id_hash,
    tenant: c.tenant,
    account_type: c.account_type,
    refresh: digest(c.refresh_token),
    version: version(blob),
  };
}

function stateEntry(c) {
  return {
    configured: true,
    account: c.account_email,
    scopes: nonNil(c.scopes),
    connected_at: connectedAtMS(c),
    client_id_hash: c.client_id_hash,
    tenant: c.tenant,
  };
}

// --- ledgers (ledgers.go) -------------------------------------------------------------------

export const LEDGERS = ["grants", "activations", "state", "mcp_servers"];

function corrupt(ledgers, name, detail) {
  const p = ledgers.path(name);
  return new CoreError(
    "CORRUPT_LEDGER",
    `inspect it, or move it aside to start that ledger empty: mv ${p} ${p}.corrupt`,
    `the ${name} ledger at ${p} is unreadable (${detail}); nothing was changed`,
    { path: p, ledger: name },
  );
}

// endOfValue returns where the first JSON value of text ends (skipping leading space), or -1.
function endOfValue(text) {
  let i = text.search(/\S/);
  if (i < 0) return -1;
  let depth = 0;
  for (; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    if (depth === 0 && (c === '"' || c === "}" || c === "]")) return i + 1;
    if (depth === 0 && /[\s,]/.test(text[i + 1] ?? " ")) return i + 1;
  }
  return -1;
}

const q = (s) => JSON.stringify(s);

/** A parsed ledger: the whole document (unknown fields kept) and the entries its paths index. */
class LedgerDoc {
  constructor(name, root, version) {
    this.name = name;
    this.root = root;
    this.version = version;
    this.entries = null;
  }

  get(path) {
    const e = this.entries;
    if (path.length === 0) return { ok: true, v: e };
    if (path.length === 2 && path[0] === "*") {
      const out = {};
      for (const [c, m] of Object.entries(e)) if (isObject(m) && path[1] in m) out[c] = m[path[1]];
      return { ok: true, v: out };
    }
    if (path.length === 1) return path[0] in e ? { ok: true, v: e[path[0]] } : { ok: false };
    if (path.length === 2) {
      const m = e[path[0]];
      return isObject(m) && path[1] in m ? { ok: true, v: m[path[1]] } : { ok: false };
    }
    return { ok: false };
  }

  put(path, v) {
    if (path.length === 1) this.entries[path[0]] = v;
    else if (path.length === 2) {
      if (!isObject(this.entries[path[0]])) this.entries[path[0]] = {};
      this.entries[path[0]][path[1]] = v;
    } else throw new Error(`hostabi: cannot write ledger path [${path.join(" ")}]`);
  }

  del(path) {
    if (path.length === 1) delete this.entries[path[0]];
    else if (path.length === 2) {
      const m = this.entries[path[0]];
      if (isObject(m)) {
        delete m[path[1]];
        if (Object.keys(m).length === 0) delete this.entries[path[0]];
      }
    } else throw new Error(`hostabi: cannot delete ledger path [${path.join(" ")}]`);
  }

  bytes() {
    if (this.name === "activations" && !("version" in this.root)) this.root.version = 1;
    return ledgerJSON(this.root) + (this.name === "mcp_servers" ? "\n" : "");
  }

  matches(path, expect) {
    if (expect === undefined) return true;
    if (!isObject(expect) || ("found" in expect && typeof expect.found !== "boolean" && expect.found !== null)) {
      throw new Error(`hostabi: malformed expect: ${JSON.stringify(expect)}`);
    }
    const { ok, v } = this.get(path);
    if (ok !== (expect.found === true)) return false;
    if (!ok) return true;
    if (expect.value === undefined) throw new Error("hostabi: malformed expect: no value");
    return canonical(expect.value) === canonical(v);
  }
}

function subMap(root, key) {
  const v = root[key];
  if (v === undefined || v === null) return (root[key] = {});
  if (!isObject(v)) throw new Error(`${q(key)} is not an object`);
  return v;
}

/** Reads and validates a ledger; a missing file is empty, a corrupt one a CORRUPT_LEDGER error. */
export function readLedger(ledgers, name) {
  const { doc, version: ver } = ledgers.read(name);
  const d = new LedgerDoc(name, {}, ver);
  if (doc !== null && doc !== undefined) {
    const p = parseJSON(doc);
    if (!p.ok) {
      const end = endOfValue(doc);
      const first = end > 0 ? parseJSON(doc.slice(0, end)) : { ok: false };
      if (first.ok && doc.slice(end).trim() !== "") throw corrupt(ledgers, name, "trailing data after the JSON document");
      let detail = "not valid JSON";
      try {
        JSON.parse(doc);
      } catch (e) {
        detail += ": " + e.message;
      }
      throw corrupt(ledgers, name, detail);
    }
    if (!isObject(p.value)) throw corrupt(ledgers, name, "expected a JSON object");
    d.root = p.value;
  }
  switch (name) {
    case "grants":
    case "state":
      d.entries = d.root;
      break;
    case "activations":
    case "mcp_servers": {
      let key = name === "activations" ? "activations" : "mcpServers";
      if (name === "mcp_servers" && !("mcpServers" in d.root) && "servers" in d.root) key = "servers";
      try {
        d.entries = subMap(d.root, key);
      } catch (e) {
        throw corrupt(ledgers, name, e.message);
      }
      break;
    }
    default:
      throw new Error(`hostabi: unknown ledger ${q(name)}`);
  }
  for (const [c, v] of Object.entries(d.entries)) {
    if (name === "state" || name === "mcp_servers") {
      if (!isObject(v)) throw corrupt(ledgers, name, `entry ${q(c)} is not an object`);
      continue;
    }
    if (!isObject(v)) throw corrupt(ledgers, name, `connector ${q(c)} is not an object`);
    for (const [a, val] of Object.entries(v)) {
      if (name === "grants") {
        if (!Array.isArray(val) || !val.every((s) => typeof s === "string")) {
          throw corrupt(ledgers, name, `the scopes of ${q(a)} for ${q(c)} are not a list of strings`);
        }
      } else if (typeof val !== "boolean") {
        throw corrupt(ledgers, name, `the activation of ${q(a)} for ${q(c)} is not true or false`);
      }
    }
  }
  return d;
}

// --- the host -----------------------------------------------------------------------------

function param(e, name, kind, what) {
  if (!(name in e)) throw new Error(`${what}: core: parameter ${q(name)} missing`);
  const v = e[name];
  if (v === null) return kind === "int" ? 0 : kind === "strings" ? null : "";
  const ok =
    kind === "string" ? typeof v === "string"
    : kind === "int" ? Number.isInteger(v)
    : Array.isArray(v) && v.every((s) => typeof s === "string");
  if (!ok) throw new Error(`${what}: cannot decode ${q(name)} from ${JSON.stringify(v)}`);
  return v;
}

function effectLine(e) {
  const o = { ...e };
  if (o.tx !== true) delete o.tx;
  return goJSON(o);
}

/**
 * Host answers the core's needs and applies its effects for one process: it owns that
 * process's access-token cache and cache of client configurations.
 */
export class Host {
  constructor(caps) {
    this.caps = { service: DEFAULT_SERVICE, getenv: () => "", catalog: () => undefined, ...caps };
    this.tokens = new Map();
    this.clients = new Map();
    /** trace(line), when set, receives one line per host call (as hostabi.Host.Trace). */
    this.trace = null;
  }

  /** Replaces the cached client view of a provider (a stale view of another process). */
  setCachedClient(provider, fact) {
    this.clients.set(provider, fact);
  }

  /** Starts an operation; secrets are its secret arguments, referenced as "arg#<name>". */
  begin(name, secrets = {}) {
    return new Op(this, name, secrets);
  }
}

class Op {
  constructor(host, name, secrets) {
    this.h = host;
    this.name = name;
    this.secrets = new Map(Object.entries(secrets).map(([k, v]) => ["arg#" + k, v]));
    this.locks = new Map();
  }

  trace(line) {
    if (this.h.trace) this.h.trace(line);
  }

  /** Releases every lock the operation holds. */
  end() {
    for (const name of [...this.locks.keys()].sort()) {
      this.locks.get(name)();
      this.trace(`release ${name}`);
    }
    this.locks.clear();
  }

  /** Resolves a secret reference of this operation. */
  secret(ref) {
    return this.secrets.get(ref);
  }

  ref(v) {
    if (!isObject(v) || typeof v.$ref !== "string" || v.$ref === "") {
      throw new Error(`hostabi: expected a secret reference, got ${JSON.stringify(v)}`);
    }
    if (!this.secrets.has(v.$ref)) throw new Error(`hostabi: unknown secret reference ${q(v.$ref)}`);
    return this.secrets.get(v.$ref);
  }

  register(key, name, value) {
    if (value) this.secrets.set(`${key}#${name}`, value);
  }

  /** Answers one need with the fact to store under need.key. */
  fetch(n) {
    if (!this.h.trace) return this.fetchKind(n);
    const { key: _key, kind, ...params } = n;
    let v;
    try {
      v = this.fetchKind(n);
    } catch (e) {
      this.trace(`==> ${kind} ${goJSON(params)}\n<== error ${e.message}`);
      throw e;
    }
    this.trace(`==> ${kind} ${goJSON(params)}\n<== ${goJSON(v)}`);
    return v;
  }

  readBlob(user) {
    const c = this.h.caps;
    try {
      return { found: true, blob: c.keyring.get(c.service, user) };
    } catch (e) {
      if (e instanceof KeyringNotFound) return { found: false, blob: undefined };
      throw e;
    }
  }

  fetchKind(n) {
    const c = this.h.caps;
    switch (n.kind) {
      case "clock.now":
        return c.clock.now();
      case "ledger.get": {
        if (!Array.isArray(n.path) || !n.path.every((s) => typeof s === "string")) {
          throw new Error(`hostabi: ledger.get path: ${JSON.stringify(n.path)} is not a list of strings`);
        }
        const { ok, v } = readLedger(c.ledgers, n.ledger).get(n.path);
        return ok ? { found: true, value: v } : { found: false };
      }
      case "connection.get": {
        const { found, blob } = this.readBlob(connectionUser(n.provider));
        if (!found) return { found: false };
        const { ok, c: cb } = parseConnection(blob);
        return ok ? connectionFact(cb, blob) : { found: true, valid: false, version: version(blob) };
      }
      case "client.get":
        return this.client(n.provider, n.fresh === true);
      case "token.get": {
        const t = this.h.tokens.get(n.provider);
        if (!t) return { found: false };
        this.register(n.key, "access_token", t.access);
        return { found: true, expires_at: t.expiresAt, client_id_hash: t.clientIDHash, connected_at: t.connectedAt };
      }
      case "lock.acquire": {
        if (this.locks.has(n.name)) return "held";
        const release = c.locks.tryLock(n.name, Number.isInteger(n.wait_ms) ? n.wait_ms : 0);
        if (!release) return "busy";
        this.locks.set(n.name, release);
        return "held";
      }
      case "oauth.refresh":
        return this.refresh(n);
      case "oauth.authorize":
        return this.authorize(n);
      case "agent.get": {
        const a = c.agents ? c.agents.agent(n.agent) : undefined;
        if (!a) return { found: false };
        const connectors = {};
        for (const [k, v] of Object.entries(a.required_connectors ?? {})) connectors[k] = nonNil(v);
        return { found: true, connectors, consumes_mcp_servers: a.consumes_mcp_servers === true };
      }
      case "mcp.get": {
        const e = this.mcpEntry(n.connector);
        return e ? { found: true, keys: e.keys, command: e.command, args: e.args } : { found: false };
      }
      case "mcp.secrets": {
        const e = this.mcpEntry(n.connector);
        if (!e) return { found: false };
        for (const k of e.keys) {
          const { found, blob } = this.readBlob(mcpUser(n.connector, k));
          if (!found) return { found: false }; // fail closed: a missing value is no credential
          this.register(n.key, k, blob);
        }
        return { found: true, keys: e.keys };
      }
    }
    throw new Error(`hostabi: unknown fact kind ${q(n.kind)}`);
  }

  // resolveClient reads a provider's client from the keyring, else from the environment.
  resolveClient(p) {
    const c = this.h.caps;
    const spec = c.catalog(p) ?? {};
    const { found, blob } = this.readBlob(clientUser(p));
    if (found) {
      const d = decodeFields(blob, { client_id: "string", client_secret: "string", tenant: "ptr" });
      if (d.ok && d.fields.client_id !== "") {
        const cl = { id: d.fields.client_id, secret: d.fields.client_secret, tenant: spec.tenant ?? "" };
        if (d.fields.tenant !== null) cl.tenant = d.fields.tenant;
        return { client: cl, fact: clientFact(cl, "keyring", version(blob)) };
      }
    }
    const idEnv = spec.client_id_env || envName(p, "CLIENT_ID");
    const secretEnv = spec.client_secret_env || envName(p, "CLIENT_SECRET");
    const id = c.getenv(idEnv) ?? "";
    if (id !== "") {
      const cl = { id, secret: c.getenv(secretEnv) ?? "", tenant: spec.tenant ?? "" };
      return { client: cl, fact: clientFact(cl, "env", "env:" + clientIDHash(id)) };
    }
    return { client: { id: "", secret: "", tenant: "" }, fact: { found: false } };
  }

  client(p, fresh) {
    if (!fresh && this.h.clients.has(p)) return this.h.clients.get(p);
    const { fact } = this.resolveClient(p);
    this.h.clients.set(p, fact);
    return fact;
  }

  refresh(n) {
    const p = n.provider;
    const { found, blob } = this.readBlob(connectionUser(p));
    const { ok, c: cb } = parseConnection(blob);
    if (!found || !ok || digest(cb.refresh_token) !== n.refresh) throw conflict("the stored refresh token changed");
    const { client } = this.resolveClient(p);
    const r = this.h.caps.oauth.refresh(this.connector(p), client, cb.refresh_token);
    const f = { status: r.status ?? 0, error: r.error ?? "", expires_in: r.expires_in ?? 0, rotated: false, refresh: null };
    if (f.status === 200) {
      if (!r.access_token) return { status: 0, error: "the token response has no access_token" };
      this.register(n.key, "access_token", r.access_token);
      if (r.refresh_token && r.refresh_token !== cb.refresh_token) {
        this.register(n.key, "refresh_token", r.refresh_token);
        f.rotated = true;
        f.refresh = digest(r.refresh_token);
      }
    }
    return f;
  }

  authorize(n) {
    if (!Array.isArray(n.scopes) || !n.scopes.every((s) => typeof s === "string")) {
      throw new Error(`hostabi: oauth.authorize scopes: ${JSON.stringify(n.scopes)}`);
    }
    const { client, fact } = this.resolveClient(n.provider);
    if (fact.found !== true) return { status: "error", error: "no OAuth client configured", http_status: 0 };
    const r = this.h.caps.oauth.authorize(this.connector(n.provider), client, n.scopes);
    const t = r.token ?? {};
    const f = { status: r.status, error: t.error ?? "", http_status: t.status ?? 0 };
    if (r.status !== "ok") return f;
    if (!t.access_token || !t.refresh_token) {
      return { status: "error", error: "the provider issued no refresh token", http_status: t.status ?? 0 };
    }
    this.register(n.key, "access_token", t.access_token);
    this.register(n.key, "refresh_token", t.refresh_token);
    return { ...f, account: t.account ?? "", scopes: nonNil(t.scopes), expires_in: t.expires_in ?? 0 };
  }

  connector(p) {
    const spec = this.h.caps.catalog(p);
    return spec ? { ...spec, id: p } : { id: "" };
  }

  mcpEntry(id) {
    const { ok, v } = readLedger(this.h.caps.ledgers, "mcp_servers").get([id]);
    if (!ok) return null;
    return {
      command: typeof v.command === "string" ? v.command : "",
      args: Array.isArray(v.args) ? v.args : [],
      keys: isObject(v.env) ? sortedKeys(v.env) : [],
    };
  }

  // --- effects (effects.go) ---------------------------------------------------------------

  /**
   * Applies effects in order, stopping at the first failure. Consecutive ledger effects on
   * one ledger are one read-modify-write; effects marked tx are one transaction.
   */
  apply(effects) {
    const isLedger = (e) => e.kind === "ledger.put" || e.kind === "ledger.delete";
    for (let i = 0; i < effects.length; ) {
      let j = i + 1;
      if (effects[i].tx === true) {
        while (j < effects.length && effects[j].tx === true) j++;
        this.applyTx(effects.slice(i, j));
      } else if (isLedger(effects[i])) {
        while (j < effects.length && isLedger(effects[j]) && effects[j].tx !== true && effects[j].ledger === effects[i].ledger) j++;
        try {
          this.applyLedger(effects.slice(i, j));
        } catch (e) {
          this.trace(`==> apply ${effects[i].kind} x${j - i}\n<== error ${e.message}`);
          throw e;
        }
        for (const e of effects.slice(i, j)) this.trace(`==> apply ${effectLine(e)}`);
      } else {
        try {
          this.applyOne(effects[i]);
        } catch (e) {
          this.trace(`==> apply ${effectLine(effects[i])}\n<== error ${e.message}`);
          throw e;
        }
        this.trace(`==> apply ${effectLine(effects[i])}`);
      }
      i = j;
    }
  }

  applyLedger(effects) {
    const c = this.h.caps;
    const name = effects[0].ledger;
    const d = readLedger(c.ledgers, name);
    for (const e of effects) {
      const path = e.path;
      if (!Array.isArray(path) || !path.every((s) => typeof s === "string")) {
        throw new Error(`hostabi: ${e.kind} path: ${JSON.stringify(path)} is not a list of strings`);
      }
      if (!d.matches(path, e.expect)) throw conflict(`${name} entry [${path.join(" ")}] changed`);
      if (e.kind === "ledger.delete") d.del(path);
      else {
        if (e.value === undefined) throw new Error("hostabi: missing value");
        d.put(path, structuredClone(e.value));
      }
    }
    c.ledgers.write(name, d.bytes(), d.version);
  }

  // checkBlob checks a keyring effect's precondition: {found:false}, {version} or {refresh}.
  checkBlob(e, blob, found) {
    if (!("expect" in e)) return;
    const x = e.expect;
    if (x !== null && !isObject(x)) throw new Error(`hostabi: malformed expect: ${JSON.stringify(x)}`);
    const found_ = x?.found, ver = x?.version ?? "", rt = x?.refresh ?? "";
    if (found_ === false) {
      if (found) throw conflict(`${e.kind} appeared`);
    } else if (ver !== "") {
      if (found && version(blob) !== ver) throw conflict(`${e.kind} found another version`);
      if (!found && e.kind !== "connection.delete") throw conflict(`${e.kind} target vanished`);
    } else if (rt !== "") {
      const { ok, c: cb } = parseConnection(blob);
      if (found && (!ok || digest(cb.refresh_token) !== rt)) {
        throw conflict("the stored refresh token is no longer the one sent");
      }
      if (!found && e.kind !== "connection.delete") throw conflict("the connection was removed");
    }
  }

  applyOne(e) {
    const c = this.h.caps;
    const p = typeof e.provider === "string" ? e.provider : "";
    switch (e.kind) {
      case "connection.put": {
        const { found, blob } = this.readBlob(connectionUser(p));
        this.checkBlob(e, blob, found);
        const cb = this.newConnection(e);
        // A corrupt state mirror stops the effect before the secret is stored.
        readLedger(c.ledgers, "state");
        c.keyring.set(c.service, connectionUser(p), encodeConnection(cb));
        return this.mirror(p, stateEntry(cb));
      }
      case "connection.delete": {
        const { found, blob } = this.readBlob(connectionUser(p));
        this.checkBlob(e, blob, found);
        readLedger(c.ledgers, "state"); // checked before deleting, like connection.put
        if (found) c.keyring.delete(c.service, connectionUser(p));
        return this.mirror(p, null);
      }
      case "connection.set_refresh": {
        const { found, blob } = this.readBlob(connectionUser(p));
        if (!found) throw conflict("the connection was removed");
        this.checkBlob(e, blob, found);
        const { c: cb } = parseConnection(blob);
        cb.refresh_token = this.ref(e.refresh);
        c.keyring.set(c.service, connectionUser(p), encodeConnection(cb));
        return;
      }
      case "client.put": {
        const { found, blob } = this.readBlob(clientUser(p));
        this.checkBlob(e, blob, found);
        const cb = { client_id: this.ref(e.client_id), client_secret: "" };
        if (e.client_secret !== undefined && e.client_secret !== null) cb.client_secret = this.ref(e.client_secret);
        cb.tenant = typeof e.tenant === "string" ? e.tenant : null;
        c.keyring.set(c.service, clientUser(p), encodeClient(cb));
        this.h.clients.delete(p); // the next read is fresh
        return;
      }
      case "token.put": {
        const access = this.ref(e.access);
        const what = "hostabi: token.put";
        this.h.tokens.set(p, {
          access,
          expiresAt: param(e, "expires_at", "int", what),
          clientIDHash: param(e, "client_id_hash", "string", what),
          connectedAt: param(e, "connected_at", "int", what),
        });
        return;
      }
      case "token.delete":
        this.h.tokens.delete(p);
        return;
      case "mcp.put":
        return this.mcpPut(e);
      case "mcp.delete":
        return this.mcpDelete(typeof e.connector === "string" ? e.connector : "");
      case "event.emit":
        if (c.events) c.events.emit({ type: typeof e.type === "string" ? e.type : "", payload: e.payload ?? null });
        return;
    }
    throw new Error(`hostabi: unknown effect kind ${q(e.kind)}`);
  }

  newConnection(e) {
    const what = "hostabi: connection.put";
    const cb = {
      account_email: param(e, "account", "string", what),
      scopes: param(e, "scopes", "strings", what),
      connected_at: param(e, "connected_at", "int", what) / 1000,
      client_id_hash: param(e, "client_id_hash", "string", what),
      tenant: typeof e.tenant === "string" ? e.tenant : null,
      account_type: typeof e.account_type === "string" ? e.account_type : null,
    };
    cb.scopes = nonNil(cb.scopes);
    cb.refresh_token = this.ref(e.refresh);
    return cb;
  }

  // mirror keeps connectors/state.json in step with the keyring (null removes the entry).
  mirror(p, entry) {
    const l = this.h.caps.ledgers;
    for (let attempt = 0; ; attempt++) {
      const d = readLedger(l, "state");
      if (entry === null) {
        if (!(p in d.entries)) return;
        delete d.entries[p];
      } else d.entries[p] = structuredClone(entry);
      try {
        l.write("state", d.bytes(), d.version);
        return;
      } catch (err) {
        if (!(err instanceof Conflict) || attempt === 8) throw err;
      }
    }
  }

  // updateLedger applies an unconditional change with retries on concurrent writes.
  updateLedger(name, change) {
    const l = this.h.caps.ledgers;
    for (let attempt = 0; ; attempt++) {
      const d = readLedger(l, name);
      change(d);
      try {
        l.write(name, d.bytes(), d.version);
        return;
      } catch (err) {
        if (!(err instanceof Conflict) || attempt === 8) throw err;
      }
    }
  }

  mcpPut(e) {
    const c = this.h.caps;
    const id = typeof e.connector === "string" ? e.connector : "";
    if (!isObject(e.env)) throw new Error(`hostabi: mcp.put env: ${JSON.stringify(e.env)} is not an object`);
    const old = this.mcpEntry(id);
    const refs = {};
    for (const k of sortedKeys(e.env)) {
      const v = this.ref(e.env[k]);
      c.keyring.set(c.service, mcpUser(id, k), v);
      refs[k] = { $keyring: `${c.service}:${mcpUser(id, k)}` };
    }
    for (const k of old?.keys ?? []) {
      if (!(k in e.env)) c.keyring.delete(c.service, mcpUser(id, k));
    }
    const args = Array.isArray(e.args) ? structuredClone(e.args) : [];
    const command = typeof e.command === "string" ? e.command : "";
    this.updateLedger("mcp_servers", (d) => {
      d.entries[id] = { command, args, env: refs };
    });
  }

  mcpDelete(id) {
    const c = this.h.caps;
    const old = this.mcpEntry(id);
    if (!old) return;
    for (const k of old.keys) c.keyring.delete(c.service, mcpUser(id, k));
    this.updateLedger("mcp_servers", (d) => {
      delete d.entries[id];
    });
  }

  // applyTx applies a transaction: every keyring target and token entry it touches is
  // snapshotted first and restored if any effect fails.
  applyTx(effects) {
    const c = this.h.caps;
    const blobs = [];
    const tokens = new Map();
    for (const e of effects) {
      const p = typeof e.provider === "string" ? e.provider : "";
      if (e.kind === "client.put") blobs.push({ user: clientUser(p), ...this.readBlob(clientUser(p)) });
      else if (e.kind === "connection.put" || e.kind === "connection.delete" || e.kind === "connection.set_refresh") {
        blobs.push({ user: connectionUser(p), ...this.readBlob(connectionUser(p)) });
      } else if (e.kind === "token.put" || e.kind === "token.delete") {
        tokens.set(p, this.h.tokens.has(p) ? { ...this.h.tokens.get(p) } : null);
      }
    }
    for (const e of effects) {
      try {
        this.applyOne(e);
        this.trace(`==> apply ${effectLine(e)}`);
        continue;
      } catch (err) {
        this.trace(`==> apply ${effectLine(e)}\n<== error ${err.message} (restoring the transaction)`);
        const rerr = [];
        const attempt = (f) => {
          try {
            f();
          } catch (x) {
            rerr.push(x.message);
          }
        };
        for (let i = blobs.length - 1; i >= 0; i--) {
          const s = blobs[i];
          attempt(() => (s.found ? c.keyring.set(c.service, s.user, s.blob) : c.keyring.delete(c.service, s.user)));
        }
        for (const [p, t] of tokens) {
          if (t === null) this.h.tokens.delete(p);
          else this.h.tokens.set(p, t);
        }
        for (const x of effects) this.h.clients.delete(typeof x.provider === "string" ? x.provider : "");
        for (const x of effects) {
          if (x.kind !== "connection.put" && x.kind !== "connection.delete") continue;
          let b;
          try {
            b = this.readBlob(connectionUser(x.provider));
          } catch {
            continue;
          }
          const { ok, c: cb } = parseConnection(b.blob);
          if (b.found && ok) attempt(() => this.mirror(x.provider, stateEntry(cb)));
          else if (!b.found) attempt(() => this.mirror(x.provider, null));
        }
        if (rerr.length > 0) err.message += `\nhostabi: restoring the transaction failed: ${rerr.join("\n")}`;
        throw err;
      }
    }
  }
}

function clientFact(cl, source, ver) {
  return {
    found: true,
    client_id_hash: clientIDHash(cl.id),
    tenant: cl.tenant !== "" ? cl.tenant : null,
    has_secret: cl.secret !== "",
    source,
    version: ver,
  };
}
