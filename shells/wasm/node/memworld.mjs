// An in-memory world equivalent to hostabi/memhost: a simulated clock, a keyring with
// failure injection, ledgers as bytes with versions, locks that other processes hold, a
// scripted token server (refresh-token rotation, reuse detection, scripted answers with
// "during" actions), the agent registry, the environment and an event log. Every process of
// a scenario shares one world; each process has its own Host (token and client caches).

import { Conflict } from "./driver.mjs";
import { KeyringNotFound } from "./host.mjs";

/** The error an injected keyring failure raises (memhost's text, so transcripts match). */
export class InjectedFailure extends Error {
  constructor() {
    super("memhost: injected failure");
  }
}

export class World {
  constructor(startMS) {
    this.keyringMap = new Map(); // service "\0" user → value
    this.ledgerDocs = new Map(); // name → string
    this.versions = new Map(); // name → counter
    this.holders = new Map(); // lock → holder
    this.nowMS = startMS;
    this.events = [];
    this.agents = new Map();
    this.env = new Map();
    this.failures = [];
    this.server = new TokenServer(this);
  }

  /** The world's capabilities, as one process sees them (hostabi.Capabilities). */
  capabilities(catalog, service) {
    const w = this;
    return {
      service,
      catalog,
      getenv: (k) => w.env.get(k) ?? "",
      keyring: {
        get(service, user) {
          w.fail("get", user);
          const k = service + "\0" + user;
          if (!w.keyringMap.has(k)) throw new KeyringNotFound(`memhost: ${service}/${user}: hostabi: not found`);
          return w.keyringMap.get(k);
        },
        set(service, user, value) {
          w.fail("set", user);
          w.keyringMap.set(service + "\0" + user, value);
        },
        delete(service, user) {
          w.fail("delete", user);
          w.keyringMap.delete(service + "\0" + user);
        },
      },
      ledgers: {
        read(name) {
          if (!w.ledgerDocs.has(name)) return { doc: null, version: "" };
          return { doc: w.ledgerDocs.get(name), version: String(w.versions.get(name) ?? 0) };
        },
        write(name, doc, ifVersion) {
          const cur = w.ledgerDocs.has(name) ? String(w.versions.get(name) ?? 0) : "";
          if (cur !== ifVersion) throw new Conflict(`memhost: ledger ${name}: hostabi: conflict`);
          w.ledgerDocs.set(name, doc);
          w.versions.set(name, (w.versions.get(name) ?? 0) + 1);
        },
        path: (name) => `mem:${name}.json`,
      },
      // A lock held by anyone else is busy at once: steps run one at a time, so the only
      // holders are other processes (which the simulated world never waits for).
      locks: {
        tryLock(name) {
          if (w.holders.has(name)) return null;
          w.holders.set(name, "self");
          let done = false;
          return () => {
            if (!done) w.holders.delete(name); // as memhost: the release frees the lock
            done = true;
          };
        },
      },
      clock: { now: () => w.nowMS },
      events: { emit: (e) => w.events.push(e) },
      agents: { agent: (id) => w.agents.get(id) },
      oauth: w.server,
    };
  }

  // fail throws the first injected failure matching (op, user), Count times.
  fail(op, user) {
    const i = this.failures.findIndex((f) => f.op === op && f.user === user);
    if (i < 0) return;
    const f = this.failures[i];
    if (--f.count <= 0) this.failures.splice(i, 1);
    throw f.err();
  }

  /** Makes the next count keyring operations op on user fail (err() builds the error). */
  failKeyring(op, user, count, err) {
    this.failures.push({ op, user, count: count || 1, err });
  }

  hold(lock, holder) {
    this.holders.set(lock, holder);
  }

  release(lock) {
    this.holders.delete(lock);
  }

  advance(ms) {
    this.nowMS += ms;
  }

  /** Every keyring user of a service (conformance.KeyringLister). */
  keyringUsers(service) {
    const out = [];
    for (const k of this.keyringMap.keys()) {
      const [svc, user] = k.split("\0");
      if (svc === service) out.push(user);
    }
    return out;
  }
}

/**
 * The scripted authorization server: refresh tokens rotate on every use, a reused or
 * unknown refresh token is invalid_grant, scripted answers replace the next responses, and
 * a scripted answer's "during" action runs while that request is in flight.
 */
export class TokenServer {
  constructor(world) {
    this.w = world;
    this.live = new Map(); // refresh token → provider
    this.used = new Set();
    this.next = new Map(); // provider → [{response, during}]
    this.auth = new Map(); // provider → [result]
    this.rotate = true;
    this.expiresIn = 3600;
    this.issued = 0;
    this.requests = 0;
    this.sent = [];
    this.reused = 0;
  }

  configure(rotate, expiresIn) {
    this.rotate = rotate;
    this.expiresIn = expiresIn;
  }

  issue(provider, refresh) {
    this.live.set(refresh, provider);
  }

  script(provider, response, during) {
    if (!this.next.has(provider)) this.next.set(provider, []);
    this.next.get(provider).push({ response, during });
  }

  scriptAuthorize(provider, result) {
    if (!this.auth.has(provider)) this.auth.set(provider, []);
    this.auth.get(provider).push(result);
  }

  token(prefix) {
    this.issued++;
    return `${prefix}-${String(this.issued).padStart(4, "0")}`;
  }

  /** A refresh request (RFC 6749 §6) → {status, error, access_token, refresh_token, expires_in}. */
  refresh(connector, _client, refresh) {
    const p = connector.id;
    const q = this.next.get(p);
    const scripted = q && q.length > 0 ? q.shift() : null;
    if (scripted?.during) scripted.during(); // another process acts while the request is in flight
    this.requests++;
    this.sent.push(refresh);
    if (this.used.has(refresh)) this.reused++;
    if (scripted) return { ...scripted.response };
    if (this.used.has(refresh) || this.live.get(refresh) !== p) return { status: 400, error: "invalid_grant" };
    const r = { status: 200, access_token: this.token(`access-${p}`), expires_in: this.expiresIn };
    if (this.rotate) {
      this.used.add(refresh);
      this.live.delete(refresh);
      r.refresh_token = this.token(`refresh-${p}`);
      this.live.set(r.refresh_token, p);
    }
    return r;
  }

  /** An interactive authorization: scripted results first, else consent for every scope. */
  authorize(connector, _client, scopes) {
    const p = connector.id;
    const q = this.auth.get(p);
    if (q && q.length > 0) {
      const r = q.shift();
      if (r.status === "ok" && r.token.refresh_token) this.live.set(r.token.refresh_token, p);
      return r;
    }
    const token = {
      status: 200,
      access_token: this.token(`access-${p}`),
      refresh_token: this.token(`refresh-${p}`),
      expires_in: this.expiresIn,
      scopes: [...scopes].sort(),
      account: "user@example.com",
    };
    this.live.set(token.refresh_token, p);
    return { status: "ok", token };
  }
}
