// The host ABI in JavaScript (hostabi/README.md; package host in Go): every need and effect
// is a primitive performed without judgement over a shell's capabilities. The core's
// decisions are validated against hostabi/schema before they reach this file, so parameters
// are trusted to have their documented shapes.
//
// Capabilities (each method may return a promise; an error it throws is answered as a
// host_error fact of code IO, or as itself when it is a HostError):
//   service                        the credential-store service
//   keyring.get/set/delete(service, user[, value])   get answers undefined when absent
//   files.read(name) → {bytes, version}   bytes null when absent; version "" then
//   files.update(name, fn(bytes, version) → bytes)   under the file's cross-process lock, atomic
//   files.path(name), files.digest(path, maxBytes) → hex (throws why not)
//   locks.tryLock(name, waitMS, signal) → release function, or null when busy
//   clock() → Unix ms, entropy(n) → bytes, getenv(name) → string, emit({type, payload})
//   fetch(url, init): WHATWG fetch, never following redirects
//   loopback.open(connector) → {redirectURI, wait(url, state, connector, timeoutMS, signal) →
//     query parameters or null (timeout), close()} or {unavailable: reason}

import { createHash } from "node:crypto";
import { crc32 } from "node:zlib";
import { validate } from "./engine.mjs";
import { Corrupt, Num, encode, isObject, own, parse, put } from "./json.mjs";

/** A failed precondition: the driver decides again from fresh facts. */
export class Conflict extends Error {}

/** A failure of the host itself, reported to the core ({"host_error": {code, detail, fix}}). */
export class HostError extends Error {
  constructor(code, detail, fix = "") {
    super(detail);
    Object.assign(this, { code, detail, fix });
  }
  toJSON() {
    return { code: this.code, detail: this.detail, ...(this.fix && { fix: this.fix }) };
  }
}

const RESPONSE_HEADERS = ["www-authenticate", "location", "content-type", "retry-after", "cache-control"];
const sha256 = (s) => createHash("sha256").update(s).digest();
/** A keyring value's version token: 16 hex digits of its SHA-256. */
export const version = (v) => sha256(v).toString("hex").slice(0, 16);
const formEscape = (s) => encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const jsonType = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : v instanceof Num ? "number" : typeof v);
const io = async (f) => {
  try {
    return await f();
  } catch (e) {
    throw e instanceof HostError || e instanceof Conflict ? e : new HostError("IO", e.message);
  }
};

/** One host serves every operation of a process and remembers the keyring slots it saw. */
export class Host {
  constructor(caps) {
    this.caps = caps;
    this.memory = new Map(); // keyring user → {value, found}
    this.trace = null; // receives one line per host call (facts and effects hold no secret)
  }
  begin() {
    return new Op(this);
  }
}

class Op {
  constructor(host) {
    Object.assign(this, { host, caps: host.caps, refs: new Map(), locks: new Map(), callback: null });
  }

  describe(ref, value) {
    this.refs.set(ref, value);
    return { $ref: ref, digest: `sha256:${version(value)}`, crc32: crc32(value).toString(16).padStart(8, "0") };
  }

  register(key, name, value) {
    return this.describe(`${key}#${name}`, value);
  }

  async fetch(n, signal) {
    let fact;
    try {
      fact = await this[n.kind](n, signal);
    } catch (e) {
      if (!(e instanceof HostError)) throw e;
      fact = { host_error: e.toJSON() };
    }
    validate(`facts.schema.json#/$defs/${n.kind}`, fact);
    this.host.trace?.(`==> ${JSON.stringify(n)}\n<== ${JSON.stringify(fact)}`);
    return fact;
  }

  "clock.now"() {
    return this.caps.clock();
  }
  async entropy(n) {
    return this.register(n.key, "value", Buffer.from(await this.caps.entropy(n.bytes)).toString("base64url"));
  }
  "env.get"(n) {
    const v = this.caps.getenv(n.name) ?? "";
    return v === "" ? { found: false } : { found: true, value: n.secret ? this.register(n.key, "value", v) : v };
  }
  "keyring.info"() {
    return { service: this.caps.service };
  }
  async "keyring.get"(n) {
    const { value, found } = await this.slot(n.user, n.fresh === true);
    if (!found) return { found: false };
    const fact = { found: true, version: version(value), value: this.register(n.key, "value", value) };
    if (n.fields) fact.json = this.redact(n.key, Buffer.from(value), n.fields);
    return fact;
  }
  async "ledger.read"(n) {
    const path = n.path ?? [];
    const { bytes, version } = await io(() => this.caps.files.read(n.ledger));
    const fact = { ledger: n.ledger, path, file: this.caps.files.path(n.ledger), found: bytes !== null };
    if (bytes === null) return fact;
    let v;
    try {
      v = parse(bytes);
    } catch (e) {
      if (!(e instanceof Corrupt)) throw e;
      return { ...fact, version, corrupt: e.message };
    }
    const shape = [jsonType(v)];
    for (const k of path) {
      v = own(v, k);
      if (v === undefined) break;
      shape.push(jsonType(v));
    }
    return { ...fact, version, exists: v !== undefined, ...(v !== undefined && { value: v }), shape };
  }
  async "file.digest"(n) {
    try {
      return { found: true, sha256: await this.caps.files.digest(n.path, n.max_bytes ?? 1 << 20) };
    } catch (e) {
      return { found: false, reason: e.message };
    }
  }
  async "lock.acquire"(n, signal) {
    if (!this.locks.has(n.name)) {
      const release = await io(() => this.caps.locks.tryLock(n.name, n.wait_ms ?? 0, signal));
      if (!release) return "busy";
      this.locks.set(n.name, release);
    }
    return "held";
  }
  "http.request"(n, signal) {
    return this.request(n, n.key, signal);
  }
  async "loopback.open"(n) {
    if (!this.callback) {
      const cb = this.caps.loopback ? await io(() => this.caps.loopback.open(n.connector)) : { unavailable: "this shell has no loopback" };
      if (cb.unavailable !== undefined) return { unavailable: cb.unavailable };
      this.callback = cb;
    }
    return { redirect_uri: this.callback.redirectURI };
  }
  async "loopback.wait"(n, signal) {
    if (!this.callback) throw new Error("host: loopback.wait before loopback.open");
    const [url, state] = [this.string(n.url), this.string(n.state)];
    const got = await io(() => this.callback.wait(url, state, n.connector, n.timeout_ms ?? 30_000, signal));
    if (got === null) return { status: "timeout" };
    const params = {};
    for (const [k, v] of Object.entries(got)) {
      if (k === "code") put(params, k, this.register(n.key, "code", v));
      else if (Buffer.byteLength(k) <= 64) put(params, k, Buffer.from(v).subarray(0, 512).toString());
    }
    return { status: "callback", params };
  }

  // slot reads a keyring slot, through the process's memory unless fresh.
  async slot(user, fresh) {
    const memory = this.host.memory;
    if (!fresh && memory.has(user)) return memory.get(user);
    const v = await io(() => this.caps.keyring.get(this.caps.service, user));
    memory.set(user, { value: v ?? "", found: v !== undefined });
    return memory.get(user);
  }

  // redact parses a JSON object and describes the listed top-level string members; anything
  // but a JSON object gives null.
  redact(key, bytes, fields = []) {
    let v;
    try {
      v = parse(bytes);
    } catch {
      return null;
    }
    if (!isObject(v)) return null;
    for (const f of fields) if (typeof own(v, f) === "string") put(v, f, this.register(key, f, v[f]));
    return v;
  }

  // request sends an HTTP request (the http.request need, the http.send effect) and answers
  // the response as a fact.
  async request(p, key, signal) {
    const headers = { accept: "application/json" };
    for (const [k, t] of Object.entries(p.headers ?? {})) if (t !== null) headers[k.toLowerCase()] = this.string(t);
    let body;
    if (p.form) [body, headers["content-type"]] = [this.form(p.form), "application/x-www-form-urlencoded"];
    if (p.json !== undefined) [body, headers["content-type"]] = [encode(this.resolve(p.json)), "application/json"];
    const timeout = AbortSignal.timeout(p.timeout_ms ?? 30_000);
    const init = { method: p.method, headers, body, redirect: "manual", signal: signal ? AbortSignal.any([signal, timeout]) : timeout };
    const fail = (e) => ({ status: 0, error: timeout.aborted || e.name === "TimeoutError" ? "timeout" : e.name === "AbortError" ? "canceled"
      : e.cause?.code === "ECONNREFUSED" ? "refused" : /CERT|TLS|SSL/.test(e.cause?.code ?? "") ? "tls" : "failed" });
    const [url, fact, chunks, max] = [this.string(p.url), { headers: {} }, [], p.max_bytes ?? 1 << 20];
    try {
      const res = await this.caps.fetch(url, init);
      fact.status = res.status;
      for (const h of RESPONSE_HEADERS) {
        const v = res.headers.get(h);
        if (v !== null) fact.headers[h] = v.length > 4096 ? v.slice(0, 4096) + "…" : v;
      }
      let n = 0;
      for await (const c of res.body ?? []) if (chunks.push(c) && (n += c.length) > max) break;
    } catch (e) {
      return fail(e);
    }
    const bytes = Buffer.concat(chunks);
    if (bytes.length > max) return { ...fact, json: null, body: "too_large" };
    try {
      return { ...fact, json: this.redact(key, bytes, p.secret_fields) ?? parse(bytes) };
    } catch {
      return { ...fact, json: null, body: bytes.toString().trim() === "" ? "empty" : "not_json" };
    }
  }

  // resolve substitutes the templates of hostabi/README.md in a parameter.
  resolve(t) {
    if (Array.isArray(t)) return t.map((e) => this.resolve(e));
    if (t === null || typeof t !== "object") return t;
    if (typeof t.$ref === "string") {
      if (!this.refs.has(t.$ref)) throw new Error(`host: unknown secret reference ${t.$ref}`);
      return this.refs.get(t.$ref);
    }
    if ("$number" in t) {
      if (!Number.isFinite(Number(t.$number))) throw new Error(`host: $number ${t.$number} is not finite`);
      return new Num(t.$number);
    }
    if ("$concat" in t) return t.$concat.map((e) => this.string(e)).join("");
    if ("$s256" in t) return sha256(this.string(t.$s256)).toString("base64url");
    if ("$basic" in t) return "Basic " + Buffer.from(t.$basic.map((e) => formEscape(this.string(e))).join(":")).toString("base64");
    if ("$url" in t) {
      const base = this.string(t.$url), query = this.form(t.query ?? {});
      return query === "" ? base : base + (base.includes("?") ? "&" : "?") + query;
    }
    const out = {};
    for (const [k, e] of Object.entries(t)) put(out, k, this.resolve(e));
    return out;
  }

  string(t) {
    const s = this.resolve(t);
    if (typeof s !== "string") throw new Error(`host: expected a string template, got ${JSON.stringify(t).slice(0, 80)}`);
    return s;
  }

  // form encodes string templates as application/x-www-form-urlencoded, keys sorted, null
  // values left out.
  form(q) {
    return Object.keys(q).sort().filter((k) => q[k] !== null).map((k) => `${formEscape(k)}=${formEscape(this.string(q[k]))}`).join("&");
  }

  /**
   * Applies effects in order and stops at the first failure, undoing the transaction it
   * belongs to (the undo lists of the earlier effects of its run of effects with undo, in
   * reverse order). Returns null, or the Conflict or HostError that stopped it.
   */
  async apply(effects, signal) {
    let run = 0;
    for (const [i, e] of effects.entries()) {
      if (!e.undo) run = i + 1;
      try {
        await this.effect(e, signal);
        this.host.trace?.(`==> apply ${JSON.stringify(e)}`);
      } catch (err) {
        if (!(err instanceof Conflict || err instanceof HostError)) throw err;
        this.host.trace?.(`==> apply ${JSON.stringify(e)}\n<== error ${err.message}`);
        for (const u of e.undo ? effects.slice(run, i).reverse().flatMap((d) => d.undo) : []) {
          await this.effect(u, signal).catch((ue) => {
            if (err instanceof HostError) err.detail += `\nrestoring after the failure: ${ue.message}`;
          });
        }
        return err;
      }
    }
    return null;
  }

  async effect(e, signal) {
    switch (e.kind) {
      case "keyring.set":
      case "keyring.delete":
        return this.keyring(e);
      case "ledger.write":
        return this.write(e);
      case "lock.release":
        this.locks.get(e.name)?.();
        return this.locks.delete(e.name);
      case "event.emit":
        return this.caps.emit?.({ type: e.type, payload: e.payload });
      case "http.send":
        return this.request(e, "send", signal); // best effort: the outcome is ignored
    }
  }

  async keyring(e) {
    const { keyring, service } = this.caps;
    if (e.expect) {
      const cur = await this.slot(e.user, true);
      const { found, version: want } = e.expect;
      if ((found !== undefined && found !== cur.found) || (want && (cur.found ? version(cur.value) !== want : e.kind === "keyring.set"))) {
        throw new Conflict(`hostabi: conflict: ${e.kind} of ${e.user} found it ${cur.found ? "changed" : "absent"}`);
      }
    }
    let value = "";
    if (e.kind === "keyring.set") {
      const v = this.resolve(e.value);
      if (typeof v !== "string" && !isObject(v) && !Array.isArray(v)) throw new Error(`host: keyring.set of ${e.user} needs a string or a JSON value`);
      value = typeof v === "string" ? v : encode(v);
      await io(() => keyring.set(service, e.user, value));
    } else await io(() => keyring.delete(service, e.user));
    this.host.memory.set(e.user, { value, found: e.kind === "keyring.set" });
  }

  async write(e) {
    const values = e.ops.map((op) => (op.delete ? undefined : this.resolve(op.value)));
    const file = this.caps.files.path(e.ledger);
    await io(() => this.caps.files.update(e.ledger, (bytes, version) => {
      if (e.version != null && e.version !== version) throw new Conflict(`hostabi: conflict: ${file} changed since it was read`);
      let doc = {};
      try {
        if (bytes !== null) doc = parse(bytes);
      } catch (err) {
        throw new HostError("IO", `${file} became unreadable (${err.message}); nothing was written`);
      }
      e.ops.forEach((op, i) => {
        const cur = op.path.reduce((v, k) => own(v, k), doc);
        const x = op.expect ?? {};
        const problem = x.exists === false ? cur !== undefined && "appeared"
          : "value" in x && (cur === undefined ? "vanished" : encode(cur, "", true) !== encode(x.value, "", true) && "changed");
        if (problem) throw new Conflict(`hostabi: conflict: ${file} ${JSON.stringify(op.path)} ${problem}`);
        doc = op.delete ? remove(doc, op.path, op.prune) : set(doc, op.path, values[i], e.ledger);
      });
      return Buffer.from(encode(doc, "  ") + "\n");
    }));
  }

  end() {
    for (const name of [...this.locks.keys()].sort()) {
      this.locks.get(name)();
      this.host.trace?.(`release ${name}`);
    }
    this.locks.clear();
    this.callback?.close();
    this.callback = null;
  }
}

// set puts v at path inside doc, creating objects on the way.
function set(doc, path, v, ledger) {
  if (path.length === 0) return v;
  if (!isObject(doc)) {
    if (doc !== null && doc !== undefined) throw new HostError("IO", `host: ledger.write ${ledger}: cannot write inside a ${jsonType(doc)}`);
    doc = {};
  }
  return put(doc, path[0], set(own(doc, path[0]), path.slice(1), v, ledger));
}

// remove deletes the value at path (absent is fine); prune removes its parent object when
// the deletion leaves it empty.
function remove(doc, path, prune) {
  if (!isObject(doc) || !Object.hasOwn(doc, path[0])) return doc;
  if (path.length === 1) delete doc[path[0]];
  else {
    const child = remove(doc[path[0]], path.slice(1), prune);
    if (prune && path.length === 2 && isObject(child) && Object.keys(child).length === 0) delete doc[path[0]];
  }
  return doc;
}
