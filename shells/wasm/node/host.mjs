// The host ABI in JavaScript (hostabi/README.md; package host in Go): every need and effect
// is a primitive performed without judgement over a shell's capabilities. Decisions are
// validated against hostabi/schema before they reach this file (engine.mjs), so parameters
// have their documented shapes; every fact is validated before it leaves.
//
// Capabilities (any method may return a promise; what it throws is answered as a host_error
// fact, of code IO unless it is a HostError):
//   service                                  the credential-store service
//   keyring.get/set/delete(service, user[, value])   get answers undefined for an absent slot
//   files.read(name) → {bytes, version}     bytes null for no file (version "" then)
//   files.update(name, fn(bytes, version) → bytes)   under the file's cross-process lock, atomic
//   files.path(name), files.digest(path, maxBytes) → hex (throws why not)
//   locks.tryLock(name, waitMS, signal) → release function, or null when busy
//   clock() → Unix ms; sleep(ms, signal) (a simulated clock advances); entropy(n) → bytes
//   getenv(name) → string; emit({type, payload})
//   fetch(url, init)                          WHATWG fetch (never follows redirects here)
//   loopback.open(connector, mode) → {unavailable: reason} when no user can authorize that
//     way here, or {redirectURI, close(), wait(url, state, connector, timeoutMS, signal,
//     alternative) → the callback's query parameters (in paste mode: of the pasted address
//     that passed the checks), null on timeout, or false when nobody can answer any more}
//   prompt({connector, verification_uri, verification_uri_complete?, user_code,
//     expires_in_ms}) → true when shown (never waits for the user), else why nobody can see it

import { createHash } from "node:crypto";
import { crc32 } from "node:zlib";
import { validate } from "./engine.mjs";
import { Num, encode, isObject, own, parse, put } from "./json.mjs";
import { signJWT } from "./jwt.mjs";

// Conflict is a failed precondition: the driver decides again from fresh facts.
export class Conflict extends Error {}

// HostError is a failure of the host itself, reported to the core as {"host_error": json}.
export class HostError extends Error {
  constructor(code, detail, fix = "") {
    super(detail);
    this.json = { code, detail, ...(fix && { fix }) };
  }
}

const HEADERS = ["www-authenticate", "location", "content-type", "retry-after", "cache-control", "dpop-nonce"];
const sha256 = (s) => createHash("sha256").update(s).digest();
export const version = (value) => sha256(value).toString("hex").slice(0, 16); // of a keyring value
const jsonType = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : v instanceof Num ? "number" : typeof v);
const hex = (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase();
const formEscape = (s) => encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()*]/g, hex);
// bug reports a malformed decision: a bug of the policy.
const bug = (message) => { throw new Error(`host: ${message}`); };
const expected = (e) => e instanceof HostError || e instanceof Conflict; // how an effect may fail
// io runs a capability: what it throws becomes a HostError (IO) unless it is one, or a Conflict.
const io = (f) => Promise.resolve().then(f).catch((e) => {
  throw expected(e) ? e : new HostError("IO", e.message);
});
// transport names why a request got no response.
const transport = (e, timeout) => {
  if (timeout.aborted || e.name === "TimeoutError") return "timeout";
  if (e.name === "AbortError") return "canceled";
  return e.cause?.code === "ECONNREFUSED" ? "refused" : /CERT|TLS|SSL/.test(e.cause?.code ?? "") ? "tls" : "failed";
};

// Host serves every operation of a process and remembers the keyring slots it saw (the
// answer to keyring.get with fresh false). trace, when set, receives one line per host call.
export class Host {
  constructor(caps) { Object.assign(this, { caps, memory: new Map(), trace: null }); }
  begin() { return new Op(this); }
}

class Op {
  constructor(host) { Object.assign(this, { host, caps: host.caps, refs: new Map(), locks: new Map(), callback: null }); }

  // describe registers a secret and answers its description.
  describe(ref, value) {
    this.refs.set(ref, value);
    return { $ref: ref, digest: `sha256:${version(value)}`, crc32: crc32(value).toString(16).padStart(8, "0") };
  }

  // A kind this shell does not perform (dpop.key: it creates no DPoP keys) is a host error.
  async fetch(n, signal) {
    const fact = await (this[n.kind] ?? (async () => { throw new HostError("IO", `this shell does not perform ${n.kind}: use the Go shell (grantwire) for it`); })).call(this, n, signal).catch((e) => (e instanceof HostError ? { host_error: e.json } : Promise.reject(e)));
    validate(`facts.schema.json#/$defs/${n.kind}`, fact);
    this.host.trace?.(`==> ${JSON.stringify(n)}\n<== ${JSON.stringify(fact)}`);
    return fact;
  }

  // --- needs, by kind ---
  async "clock.now"() { return this.caps.clock(); }
  async "clock.sleep"(n, signal) { return this.caps.sleep(n.ms, signal).then(() => this.caps.clock()); }
  async entropy(n) {
    return this.describe(`${n.key}#value`, Buffer.from(await this.caps.entropy(n.bytes)).toString("base64url"));
  }
  async "env.get"(n) {
    const v = this.caps.getenv(n.name) ?? "";
    return v === "" ? { found: false } : { found: true, value: n.secret ? this.describe(`${n.key}#value`, v) : v };
  }
  async "keyring.info"() { return { service: this.caps.service }; }
  async "keyring.get"(n) {
    const { value, found } = await this.slot(n.user, n.fresh === true);
    if (!found) return { found: false };
    const fact = { found: true, version: version(value), value: this.describe(`${n.key}#value`, value) };
    return n.fields ? { ...fact, json: this.redact(n.key, Buffer.from(value), n.fields) } : fact;
  }
  async "ledger.read"(n) {
    const { bytes, version } = await io(() => this.caps.files.read(n.ledger));
    const fact = { ledger: n.ledger, path: n.path ?? [], file: this.caps.files.path(n.ledger), found: bytes !== null };
    const doc = bytes === null ? null : parse(bytes);
    if (doc === null) return fact;
    if (doc.corrupt) return { ...fact, version, corrupt: doc.corrupt };
    const shape = [jsonType(doc.value)];
    let v = doc.value;
    for (let i = 0; i < fact.path.length && (v = own(v, fact.path[i])) !== undefined; i++) shape.push(jsonType(v));
    return { ...fact, version, exists: v !== undefined, ...(v !== undefined && { value: v }), shape };
  }
  async "file.digest"(n) {
    const digest = io(() => this.caps.files.digest(n.path, n.max_bytes ?? 1 << 20));
    return digest.then((sha256) => ({ found: true, sha256 }), (e) => ({ found: false, reason: e.message }));
  }
  async "lock.acquire"(n, signal) {
    const release = this.locks.get(n.name) ?? (await io(() => this.caps.locks.tryLock(n.name, n.wait_ms ?? 0, signal)));
    if (release) this.locks.set(n.name, release);
    return release ? "held" : "busy";
  }
  async "loopback.open"(n) {
    const cb = this.callback ?? (await io(() => this.caps.loopback.open(n.connector, n.mode ?? "listen")));
    if (cb.unavailable !== undefined) return { unavailable: cb.unavailable };
    this.callback = cb;
    return { redirect_uri: cb.redirectURI };
  }
  async "loopback.wait"(n, signal) {
    if (!this.callback) bug("loopback.wait before loopback.open");
    const [url, state, timeout] = [this.resolve(n.url), this.resolve(n.state), n.timeout_ms ?? 30_000];
    const got = await io(() => this.callback.wait(url, state, n.connector, timeout, signal, n.alternative));
    if (got === null) return { status: "timeout" };
    if (got === false) return { status: "unavailable" };
    const params = {};
    for (const [k, v] of Object.entries(got)) {
      if (k === "code") put(params, k, this.describe(`${n.key}#code`, v));
      else if (Buffer.byteLength(k) <= 64) put(params, k, Buffer.from(v).subarray(0, 512).toString());
    }
    return { status: "callback", params };
  }
  async "prompt.show"(n) {
    const shown = await io(() => (this.caps.prompt ? this.caps.prompt(n) : "this shell cannot show a device code"));
    return shown === true ? { shown } : { shown: false, reason: String(shown) };
  }
  // http.request sends an HTTP request (the need, and the http.send effect) and answers the
  // response, or {status: 0, error} when none came.
  async "http.request"(p, signal) {
    const headers = { accept: "application/json" };
    for (const [k, t] of Object.entries(p.headers ?? {})) if (t !== null) headers[k.toLowerCase()] = this.resolve(t);
    let body;
    if (p.form) [body, headers["content-type"]] = [this.form(p.form), "application/x-www-form-urlencoded"];
    if (p.json !== undefined) [body, headers["content-type"]] = [encode(this.resolve(p.json)), "application/json"];
    const timeout = AbortSignal.timeout(p.timeout_ms ?? 30_000);
    const init = { method: p.method, headers, body, redirect: "manual", signal: AbortSignal.any([signal ?? timeout, timeout]) };
    const [url, max, chunks, fact] = [this.resolve(p.url), p.max_bytes ?? 1 << 20, [], { headers: {} }];
    try {
      const res = await this.caps.fetch(url, init);
      fact.status = res.status;
      for (const h of HEADERS) if (res.headers.has(h)) fact.headers[h] = res.headers.get(h).replace(/^(.{4096}).+/s, "$1…");
      let size = 0;
      for await (const chunk of res.body ?? []) if (chunks.push(chunk) && (size += chunk.length) > max) break;
    } catch (e) {
      return { status: 0, error: transport(e, timeout) };
    }
    const bytes = Buffer.concat(chunks);
    if (bytes.length > max) return { ...fact, json: null, body: "too_large" };
    const { value, corrupt } = parse(bytes);
    if (corrupt) return { ...fact, json: null, body: bytes.toString().trim() === "" ? "empty" : "not_json" };
    return { ...fact, json: this.redact(p.key, bytes, p.secret_fields) ?? value };
  }

  // slot reads a keyring slot, from the process's memory unless fresh.
  async slot(user, fresh) {
    if (!fresh && this.host.memory.has(user)) return this.host.memory.get(user);
    const v = await io(() => this.caps.keyring.get(this.caps.service, user));
    this.host.memory.set(user, { value: v ?? "", found: v !== undefined });
    return this.host.memory.get(user);
  }

  // redact reads a JSON object with the listed top-level string members described
  // ("<key>#<member>"); anything but a JSON object is null.
  redact(key, bytes, fields = []) {
    const { value } = parse(bytes);
    if (!isObject(value)) return null;
    for (const f of fields) if (typeof own(value, f) === "string") put(value, f, this.describe(`${key}#${f}`, value[f]));
    return value;
  }

  // resolve substitutes the templates of hostabi/README.md in a parameter.
  resolve(t) {
    if (t === null || typeof t !== "object") return t;
    if (Array.isArray(t)) return t.map((e) => this.resolve(e));
    if (typeof t.$ref === "string") return this.refs.has(t.$ref) ? this.refs.get(t.$ref) : bug(`unknown secret ${t.$ref}`);
    if ("$number" in t) return Number.isFinite(Number(t.$number)) ? new Num(t.$number) : bug(`$number ${t.$number} is not finite`);
    if ("$concat" in t) return t.$concat.map((e) => this.resolve(e)).join("");
    if ("$s256" in t) return sha256(this.resolve(t.$s256)).toString("base64url");
    if ("$basic" in t) return "Basic " + Buffer.from(t.$basic.map((e) => formEscape(this.resolve(e))).join(":")).toString("base64");
    if ("$jwt" in t) {
      const j = t.$jwt;
      if (!isObject(j)) bug("$jwt needs an object");
      const [key, claims, header] = [this.resolve(j.key), this.resolve(j.claims), this.resolve(j.header ?? {})];
      if (typeof key !== "string") bug("$jwt needs a key");
      if (!isObject(claims)) bug("$jwt needs claims, an object");
      if (!isObject(header)) bug("$jwt's header must be an object");
      return signJWT(key, header, claims, (j.algs ?? []).map((a) => this.resolve(a)));
    }
    if ("$url" in t) {
      const [base, query] = [this.resolve(t.$url), this.form(t.query ?? {})];
      return query === "" ? base : base + (base.includes("?") ? "&" : "?") + query;
    }
    const out = {};
    for (const [k, e] of Object.entries(t)) put(out, k, this.resolve(e));
    return out;
  }

  // form encodes string templates as application/x-www-form-urlencoded, keys sorted, nulls left out.
  form(q) {
    const keys = Object.keys(q).sort().filter((k) => q[k] !== null);
    return keys.map((k) => `${formEscape(k)}=${formEscape(this.resolve(q[k]))}`).join("&");
  }

  // apply applies effects in order and stops at the first failure, undoing the transaction
  // it belongs to (the undo lists of the earlier effects of its run of effects with undo, in
  // reverse order). It returns null, or the Conflict or HostError that stopped it.
  async apply(effects, signal) {
    for (let i = 0, run = 0; i < effects.length; i++) {
      const e = effects[i];
      if (!e.undo) run = i + 1;
      const err = await this.effect(e, signal).then(() => null, (x) => (expected(x) ? x : Promise.reject(x)));
      this.host.trace?.(`==> apply ${JSON.stringify(e)}${err ? `\n<== error ${err.message}` : ""}`);
      if (!err) continue;
      for (const u of e.undo ? effects.slice(run, i).reverse().flatMap((done) => done.undo) : []) {
        const problem = await this.effect(u, signal).then(() => "", (x) => `\nrestoring after the failure: ${x.message}`);
        if (err instanceof HostError) err.json.detail += problem;
      }
      return err;
    }
    return null;
  }

  // --- effects, by kind ---
  async effect(e, signal) {
    const { keyring, service, files } = this.caps;
    switch (e.kind) {
      case "keyring.set":
      case "keyring.delete": {
        const { found, version: want } = e.expect ?? {};
        const cur = e.expect ? await this.slot(e.user, true) : null;
        const moved = want && (cur.found ? version(cur.value) !== want : e.kind === "keyring.set");
        if (moved || (found !== undefined && found !== cur.found)) throw new Conflict(`${e.kind} of ${e.user}: the slot changed`);
        const v = e.kind === "keyring.set" ? this.resolve(e.value) : undefined;
        if (v !== undefined && !["string", "object", "array"].includes(jsonType(v))) bug(`keyring.set of ${e.user}: not a string or JSON`);
        const value = v === undefined || typeof v === "string" ? v : encode(v);
        await io(() => (value === undefined ? keyring.delete(service, e.user) : keyring.set(service, e.user, value)));
        return this.host.memory.set(e.user, { value: value ?? "", found: value !== undefined });
      }
      case "ledger.write": {
        const values = e.ops.map((op) => (op.delete ? undefined : this.resolve(op.value)));
        const file = files.path(e.ledger);
        return io(() => files.update(e.ledger, (bytes, version) => {
          if (e.version != null && e.version !== version) throw new Conflict(`${file} changed since it was read`);
          const read = bytes === null ? { value: {} } : parse(bytes);
          if (read.corrupt) throw new HostError("IO", `${file} became unreadable (${read.corrupt}); nothing was written`);
          let doc = read.value;
          e.ops.forEach((op, i) => {
            const [cur, x] = [op.path.reduce(own, doc), op.expect ?? {}];
            const changed = "value" in x && (cur === undefined || encode(cur, "", true) !== encode(x.value, "", true));
            if (x.exists === false ? cur !== undefined : changed) throw new Conflict(`${file} ${JSON.stringify(op.path)} changed`);
            doc = op.delete ? remove(doc, op.path, op.prune) : set(doc, op.path, values[i], e.ledger);
          });
          return Buffer.from(encode(doc, "  ") + "\n");
        }));
      }
      case "lock.release":
        this.locks.get(e.name)?.();
        return this.locks.delete(e.name);
      case "event.emit":
        return this.caps.emit({ type: e.type, payload: e.payload });
      case "http.send":
        return this["http.request"]({ ...e, key: "send" }, signal); // best effort: the outcome is ignored
    }
  }

  // end releases the locks the operation still holds and closes its loopback listener.
  end() {
    for (const name of [...this.locks.keys()].sort()) {
      this.locks.get(name)();
      this.host.trace?.(`release ${name}`);
    }
    this.locks.clear();
    this.callback?.close?.();
  }
}

// set puts v at path inside doc, creating objects on the way.
function set(doc, path, v, ledger) {
  if (path.length === 0) return v;
  if (doc != null && !isObject(doc)) throw new HostError("IO", `host: ledger.write ${ledger}: cannot write inside a ${jsonType(doc)}`);
  return put(doc ?? {}, path[0], set(own(doc, path[0]), path.slice(1), v, ledger));
}

// remove deletes the value at path (absent is fine); prune removes its parent object when
// the deletion leaves it empty.
function remove(doc, path, prune) {
  if (!isObject(doc) || !Object.hasOwn(doc, path[0])) return doc;
  if (path.length === 1) delete doc[path[0]];
  const child = path.length === 1 ? undefined : remove(doc[path[0]], path.slice(1), prune);
  if (prune && path.length === 2 && isObject(child) && Object.keys(child).length === 0) delete doc[path[0]];
  return doc;
}
