// The in-memory test world, the JavaScript twin of hostabi/memhost (with the entropy of
// internal/memshell): a simulated clock, a keyring with failure injection, files under a
// simulated home with version counters, locks other processes hold, an event log, the
// environment, and a scripted authorization server reached through the host's fetch at the
// catalog's URLs (refresh tokens rotated with reuse detection, scripted answers with
// "during" actions, single-use codes, PKCE S256 checked) with a simulated user at the
// loopback redirect. Every process of a scenario shares one world; each has its own Host.
//
// It mirrors memhost closely enough that the Node shell asks the core exactly the questions
// the Go host asks (node_test.go compares them): same file versions ("v<n>"), same token
// names and numbering, same texts of injected failures.

import { createHash } from "node:crypto";
import { HostError } from "./host.mjs";

export const HOME = "/home/user/.grantwire";
const REDIRECT = "http://127.0.0.1:49152/callback";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const json = (status, v) => new Response(JSON.stringify(v) + "\n", { status, headers: { "content-type": "application/json" } });
const sha256 = (s) => createHash("sha256").update(s).digest();

export class World {
  constructor(startMS) {
    this.keyringMap = new Map(); // service "\0" user → value
    this.files = new Map(); // name → Buffer
    this.versions = new Map(); // name → counter
    this.sources = new Map(); // path → Buffer (file.digest)
    this.holders = new Map(); // lock → holder
    this.nowMS = startMS;
    this.events = [];
    this.env = new Map();
    this.failures = [];
    this.entropy = { buf: Buffer.alloc(0), n: 0 };
    this.server = new Server(this);
  }

  /** The capabilities of a process of this world (host.mjs). */
  capabilities(service) {
    const w = this;
    return {
      service,
      keyring: {
        get(svc, user) {
          w.fail("get", user);
          return w.keyringMap.get(svc + "\0" + user);
        },
        set(svc, user, value) {
          w.fail("set", user);
          w.keyringMap.set(svc + "\0" + user, value);
        },
        delete(svc, user) {
          w.fail("delete", user);
          w.keyringMap.delete(svc + "\0" + user);
        },
      },
      files: {
        read: (name) => ({ bytes: w.files.get(name) ?? null, version: w.files.has(name) ? `v${w.versions.get(name)}` : "" }),
        update(name, fn) {
          const next = fn(w.files.get(name) ?? null, w.files.has(name) ? `v${w.versions.get(name)}` : "");
          w.files.set(name, Buffer.from(next));
          w.versions.set(name, (w.versions.get(name) ?? 0) + 1);
        },
        path: (name) => `${HOME}/${name}`,
        digest(path, max) {
          const b = w.sources.get(path);
          if (!b) throw new Error(`${path}: no such file`);
          if (b.length > max) throw new Error(`${path} is larger than ${max} bytes`);
          return sha256(b).toString("hex");
        },
      },
      // A lock held from outside is busy at once: steps run one at a time, so the only
      // holders are other processes, which the simulated world never waits for.
      locks: {
        tryLock(name) {
          if (w.holders.has(name)) return null;
          w.holders.set(name, "self");
          let once = false;
          return () => {
            if (!once) w.holders.delete(name);
            once = true;
          };
        },
      },
      clock: () => w.nowMS,
      // A simulated clock advances at once (hostabi.Sleeper in memhost).
      sleep: async (ms, signal) => {
        signal?.throwIfAborted();
        w.nowMS += ms;
      },
      prompt: (p) => w.server.prompt(p),
      entropy: (n) => w.random(n),
      getenv: (k) => w.env.get(k) ?? "",
      emit: (e) => w.events.push(e),
      fetch: (url, init) => w.server.fetch(url, init),
      loopback: { open: (connector) => w.server.open(connector) }, // paste mode: the same user pastes the redirect
    };
  }

  // random draws from the stream of internal/memshell.Entropy: SHA-256("grantwire test
  // entropy <n>") for n = 0, 1, 2, ... end to end.
  random(n) {
    const e = this.entropy;
    while (e.buf.length < n) e.buf = Buffer.concat([e.buf, sha256(`grantwire test entropy ${e.n++}`)]);
    const out = e.buf.subarray(0, n);
    e.buf = e.buf.subarray(n);
    return out;
  }

  // fail throws the first injected failure matching (op, user), count times.
  fail(op, user) {
    const f = this.failures.find((x) => x.count > 0 && x.op === op && x.user === user);
    if (!f) return;
    f.count--;
    throw f.insecure
      ? new HostError("INSECURE_STORE", "memhost: injected", "install and unlock a Secret Service provider (gnome-keyring or KeePassXC)")
      : new Error("memhost: injected failure");
  }

  failKeyring(op, user, count, insecure) {
    this.failures.push({ op, user, count: count || 1, insecure: insecure === true });
  }

  /** Every keyring user of a service. */
  keyringUsers(service) {
    return [...this.keyringMap.keys()].map((k) => k.split("\0")).filter(([s]) => s === service).map(([, u]) => u);
  }
}

/** memhost.Server: the scripted authorization server and the user at the browser. */
class Server {
  constructor(world) {
    Object.assign(this, { w: world, endpoints: [], live: new Map(), used: new Set(), next: new Map(), during: new Map() });
    Object.assign(this, { auth: new Map(), codes: new Map(), accounts: new Map(), rotate: true, expiresIn: 3600 });
    Object.assign(this, { devices: new Map(), latest: new Map() });
    Object.assign(this, { issued: 0, codesIssued: 0, requests: 0, sent: [], reused: 0, revoked: [] });
    Object.assign(this, { issuers: new Map(), clientAuth: new Map(), revokes: new Map(), exchanges: 0, revocations: 0, authSeen: [] });
  }

  /** Answers a provider's endpoints (URLs may hold "{tenant}"); an "issuer" is sent as every authorization response's iss. */
  serve(provider, urls) {
    for (const [kind, u] of Object.entries(urls)) {
      if (!u) continue;
      if (kind === "issuer") {
        this.issuers.set(provider, u);
        continue;
      }
      const pattern = u.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("\\{tenant\\}", "[^/]+");
      this.endpoints.push({ provider, kind, re: new RegExp(`^${pattern}$`) });
    }
  }

  configure(rotate, expiresIn) {
    [this.rotate, this.expiresIn] = [rotate, expiresIn];
  }

  issue(provider, refresh) {
    this.live.set(refresh, provider);
  }

  queue(map, provider, x) {
    if (!map.has(provider)) map.set(provider, []);
    map.get(provider).push(x);
  }

  /** Queues the answer of a provider's next refresh; during runs while it is in flight. */
  script(provider, answer, during) {
    this.queue(this.next, provider, answer);
    this.queue(this.during, provider, during ?? (() => {}));
  }

  scriptAuthorize(provider, answer) {
    this.queue(this.auth, provider, answer);
  }

  /** How a provider's clients must authenticate (memhost.Server.ClientAuth): method, or "" for RFC 8414's default. */
  requireClientAuth(provider, method, secretRequired) {
    this.clientAuth.set(provider, { method, secretRequired });
  }

  scriptRevoke(provider, answer) {
    this.queue(this.revokes, provider, answer);
  }

  // authOf says how a request authenticates its client (memhost's authMethod).
  authOf(init, form) {
    const m = /^basic (.*)$/i.exec(new Headers(init.headers).get("authorization") ?? "");
    const [user, pass] = m ? Buffer.from(m[1], "base64").toString().split(/:(.*)/s).map((x) => decodeURIComponent((x ?? "").replaceAll("+", " "))) : [];
    const posted = form.has("client_secret");
    if (m && posted) return { method: "mixed", id: user, secret: true };
    if (m) return { method: "client_secret_basic", id: user, secret: pass !== "" };
    if (posted) return { method: "client_secret_post", id: form.get("client_id") ?? "", secret: form.get("client_secret") !== "" };
    return { method: "none", id: form.get("client_id") ?? "", secret: false };
  }

  // refused is why a client authentication is refused, "" when accepted (memhost's authRefusal).
  refused(provider, { method, id, secret }) {
    const want = this.clientAuth.get(provider) ?? { method: "", secretRequired: false };
    if (id === "") return "no client id";
    if (method === "mixed") return "a secret sent two ways";
    if (want.secretRequired && !secret) return "no client secret";
    if (want.method !== "" && method !== want.method) return `authenticated with ${method}`;
    if (want.method === "" && method === "client_secret_post") return "a secret in the form";
    if (method !== "none" && !secret) return "an empty secret";
    return "";
  }

  token(prefix) {
    return `${prefix}-${String(++this.issued).padStart(4, "0")}`;
  }

  route(u) {
    return this.endpoints.find((e) => e.re.test(u)) ?? {};
  }

  // fetch is the world's HTTP: a request reaches the endpoint its URL names.
  async fetch(url, init) {
    const u = new URL(url);
    const { provider, kind } = this.route(url.split("?")[0]);
    const form = new URLSearchParams(typeof init.body === "string" ? init.body : "");
    switch (kind) {
      case "token_url": {
        if (init.method !== "POST") return json(400, { error: "invalid_request" });
        const auth = this.authOf(init, form);
        this.authSeen.push(auth.method);
        if (form.get("grant_type") === "authorization_code") this.exchanges++;
        if (this.refused(provider, auth)) {
          if (form.get("grant_type") === "refresh_token") this.requests++;
          return json(401, { error: "invalid_client" });
        }
        if (form.get("grant_type") === "refresh_token") return this.refresh(provider, form.get("refresh_token") ?? "");
        if (form.get("grant_type") === "authorization_code") return this.exchange(provider, form);
        if (form.get("grant_type") === DEVICE_GRANT) return this.devicePoll(provider, form.get("device_code") ?? "");
        return json(400, { error: "unsupported_grant_type" });
      }
      case "device_authorization_url":
        if (init.method !== "POST") return json(400, { error: "invalid_request" });
        return this.deviceAuthorization(provider, u, form);
      case "userinfo_url": {
        const auth = new Headers(init.headers).get("authorization") ?? "";
        const account = this.accounts.get(auth.replace(/^Bearer /, ""));
        if (!/^bearer /i.test(auth) || account === undefined) return json(401, { error: "invalid_token" });
        return json(200, { email: account, sub: "subject-1" });
      }
      case "revocation_url": {
        if (init.method !== "POST") return json(400, { error: "invalid_request" });
        this.revocations++;
        const a = this.revokes.get(provider)?.shift();
        if (a && !a.status) throw a.error === "timeout" ? new DOMException("no answer", "TimeoutError") : new TypeError("fetch failed");
        if (a) return json(a.status, { error: a.error });
        if (this.refused(provider, this.authOf(init, form))) return json(401, { error: "invalid_client" });
        this.revoked.push(form.get("token"));
        this.live.delete(form.get("token"));
        return new Response(null, { status: 200 });
      }
    }
    throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED", host: u.host } });
  }

  refresh(provider, refresh) {
    this.during.get(provider)?.shift()?.(); // another process acts while the request is in flight
    this.requests++;
    this.sent.push(refresh);
    if (this.used.has(refresh)) this.reused++;
    const a = this.next.get(provider)?.shift();
    if (a) return this.scripted(provider, a);
    if (this.used.has(refresh) || this.live.get(refresh) !== provider) return json(400, { error: "invalid_grant" });
    const r = { access_token: this.token(`access-${provider}`), expires_in: this.expiresIn, token_type: "Bearer" };
    if (this.rotate) {
      this.used.add(refresh);
      this.live.delete(refresh);
      r.refresh_token = this.token(`refresh-${provider}`);
      this.live.set(r.refresh_token, provider);
    }
    return json(200, r);
  }

  scripted(provider, a) {
    if (!a.status) throw a.error === "timeout" ? new DOMException("no answer", "TimeoutError") : new TypeError("fetch failed");
    if (a.not_json) return new Response("<html>sign in</html>", { status: a.status, headers: { "content-type": "text/html" } });
    if (a.error) return json(a.status, { error: a.error });
    const r = { token_type: "Bearer" };
    if (a.access_token) r.access_token = a.access_token;
    if (a.refresh_token) {
      r.refresh_token = a.refresh_token;
      this.live.set(a.refresh_token, provider);
    }
    if (a.expires_in) r.expires_in = a.expires_in;
    if (a.scope !== undefined && a.scope !== null) r.scope = a.scope;
    return json(a.status, r);
  }

  // open is the loopback: an "interactive_required" outcome at the head of the script
  // means no browser here.
  open(provider) {
    const q = this.auth.get(provider);
    if (q?.[0]?.status === "interactive_required") {
      q.shift();
      return { unavailable: "memhost: no browser: hostabi: no way to complete a browser authorization here" };
    }
    return {
      redirectURI: REDIRECT,
      close() {},
      wait: (url, state) => {
        const params = this.authorize(provider, url);
        if (params !== null && params.state !== state) throw new Error("memhost: the callback's state does not match");
        return params;
      },
    };
  }

  // authorize plays the user at the authorization endpoint: the callback's parameters, or
  // null when nobody answers (timeout).
  authorize(provider, authURL) {
    const q = new URL(authURL).searchParams;
    const at = this.route(authURL.split("?")[0]);
    if (at.provider !== provider || at.kind !== "authorization_url") throw new Error(`memhost: not ${provider}'s authorization endpoint`);
    const a = this.auth.get(provider)?.shift() ?? { status: "ok" };
    const out = { state: q.get("state") ?? "" };
    if (this.issuers.has(provider)) out.iss = this.issuers.get(provider);
    if (a.iss !== undefined && a.iss !== null) out.iss = a.iss;
    if (a.no_iss) delete out.iss;
    if (a.status === "timeout") return null;
    if (a.status === "denied") return { ...out, error: a.error || "access_denied" };
    if (q.get("response_type") !== "code" || q.get("code_challenge_method") !== "S256" || !q.get("code_challenge") || q.get("redirect_uri") !== REDIRECT) {
      return { ...out, error: "invalid_request" };
    }
    const code = `code-${provider}-${String(++this.codesIssued).padStart(4, "0")}`;
    const scopes = a.scopes ?? (q.get("scope") ?? "").split(/[ ,]/).filter((s) => s !== "");
    this.codes.set(code, { provider, challenge: q.get("code_challenge"), account: a.account || "user@example.com", scopes, a });
    return { ...out, code };
  }

  exchange(provider, form) {
    const code = form.get("code") ?? "";
    const g = this.codes.get(code);
    this.codes.delete(code); // single use
    if (!g || g.provider !== provider || form.get("redirect_uri") !== REDIRECT) return json(400, { error: "invalid_grant" });
    if (sha256(form.get("code_verifier") ?? "").toString("base64url") !== g.challenge) return json(400, { error: "invalid_grant" });
    if (g.a.status === "error") return json(g.a.http_status || 400, { error: g.a.error });
    return this.tokens(g);
  }

  // tokens answers a granted authorization (memhost's Server.tokens).
  tokens(g) {
    const [a, provider] = [g.a, g.provider];
    if (a.not_json) return new Response("<html>sign in</html>", { status: 200, headers: { "content-type": "text/html" } });
    const access = a.access_token || this.token(`access-${provider}`);
    const refresh = a.refresh_token || (a.no_refresh ? "" : this.token(`refresh-${provider}`));
    const r = { access_token: access, expires_in: a.expires_in || this.expiresIn, token_type: "Bearer", scope: [...g.scopes].sort().join(" ") };
    if (refresh) {
      r.refresh_token = refresh;
      this.live.set(refresh, provider);
    }
    this.accounts.set(access, g.account);
    return json(200, r);
  }

  // deviceAuthorization issues a device code (RFC 8628 §3.2) whose user does what the
  // provider's next scripted authorization says (memhost's Server.deviceAuthorization).
  deviceAuthorization(provider, at, form) {
    const a = this.auth.get(provider)?.shift() ?? { status: "ok" };
    const d = a.device ?? {};
    if (d.error) return json(d.http_status || 400, { error: d.error });
    const [expiresIn, interval, n] = [d.expires_in || 900, d.interval || 5, String(++this.codesIssued).padStart(4, "0")];
    const [code, user, verify] = [`device-${provider}-${n}`, `CODE-${n}`, `${at.protocol}//${at.host}/device`];
    const scopes = a.scopes ?? (form.get("scope") ?? "").split(/[ ,]/).filter((s) => s !== "");
    const dc = { provider, scopes, a, expires: this.w.nowMS + expiresIn * 1000, polls: 0 };
    this.devices.set(code, dc);
    this.latest.set(provider, dc);
    const body = { device_code: code, user_code: user, verification_uri: verify, verification_uri_complete: `${verify}?user_code=${user}` };
    return json(200, { ...body, expires_in: expiresIn, interval });
  }

  // prompt is the user reading a device code: nobody when the authorization says so.
  prompt(p) {
    if (this.latest.get(p.connector)?.a.status !== "interactive_required") return true;
    return "memhost: nobody to show the code to: hostabi: no way to complete a browser authorization here";
  }

  // devicePoll answers a poll with a device code (memhost's Server.devicePoll).
  devicePoll(provider, code) {
    const dc = this.devices.get(code);
    if (!dc || dc.provider !== provider) return json(400, { error: "invalid_grant" });
    if (this.w.nowMS >= dc.expires) return json(400, { error: "expired_token" });
    const a = dc.a;
    const p = (a.polls ?? [])[dc.polls++];
    if (p === "timeout") throw new DOMException("no answer", "TimeoutError");
    if (p !== undefined) return json(400, { error: p });
    if (a.status === "denied") return json(400, { error: a.error || "access_denied" });
    if (a.status === "timeout" || a.status === "interactive_required") return json(400, { error: "authorization_pending" });
    if (a.status === "error") return json(a.http_status || 400, { error: a.error });
    this.devices.delete(code); // used up
    return this.tokens({ provider, scopes: dc.scopes, a, account: a.account || "user@example.com" });
  }
}
