// The in-memory test world, the JavaScript twin of internal/testworld/memhost (with the
// entropy of internal/testworld/memshell): a simulated clock, a keyring with failure
// injection, files under a simulated home with version counters, locks other processes
// hold, an event log, the environment; and, as memhost has, the test worlds' one
// authorization server (internal/testworld/authserver), here over HTTP: the host's fetch
// reaches it at the catalog's URLs, the user at the loopback and at the device prompt does
// what it says. Every process of a scenario shares one world; each has its own Host.
//
// It mirrors memhost closely enough that the Node shell asks the core exactly the questions
// the Go host asks (node_test.go compares them): same file versions ("v<n>"), same
// entropy, same texts of injected failures, and the same server answering.

import { createHash } from "node:crypto";
import { HostError } from "./host.mjs";

export const HOME = "/home/user/.grantwire";
const REDIRECT = "http://127.0.0.1:49152/callback";
const sha256 = (s) => createHash("sha256").update(s).digest();

export class World {
  /** A world whose clock reads startMS and whose authorization server is a new world of the control API at hub. */
  static async open(hub, startMS) {
    const w = new World(startMS);
    w.server = await Server.open(hub, w);
    return w;
  }

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
    this.server = null;
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

  // random draws from the stream of internal/testworld/memshell.Entropy: SHA-256("grantwire test
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

/**
 * The world's authorization server: a world of the Go test worlds' one authorization server
 * (internal/testworld/authserver), reached over HTTP through its control API (Worlds in
 * control.go): created per scenario, scripted with the scenario's token_server, told the
 * simulated time before each request, and asked whether a user is there. Every request of
 * the host for a catalog URL goes to the world's /url/<scheme>/<host>/<path>.
 */
export class Server {
  /** Creates a world on the control API at hub (http://127.0.0.1:PORT) whose clock reads world.nowMS. */
  static async open(hub, world) {
    const res = await fetch(`${hub}/worlds`, { method: "POST", body: JSON.stringify({ now_ms: world.nowMS }) });
    if (res.status !== 201) throw new Error(`authserver: POST /worlds: ${res.status} ${await res.text()}`);
    return new Server(world, (await res.json()).url);
  }

  constructor(world, url) {
    Object.assign(this, { w: world, url, clockMS: world.nowMS, onDuring: null });
  }

  async control(method, path, body) {
    const res = await fetch(`${this.url}/control/${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) throw new Error(`authserver: ${method} ${path}: ${res.status} ${text}`);
    return text === "" ? null : JSON.parse(text);
  }

  /** Loads a piece of the scenario's script (authserver.Script). */
  script(piece) {
    return this.control("POST", "script", piece);
  }

  /** The counters, named as final.token_server names them. */
  counters() {
    return this.control("GET", "counters");
  }

  /** Deletes the world. */
  async close() {
    await (await fetch(this.url, { method: "DELETE" })).body?.cancel();
  }

  // fetch is the world's HTTP: the request reaches the server at the catalog URL's path
  // there, after the server was told the time; an answer during which another process
  // acts (Grantwire-During) is handed on once that process has acted.
  async fetch(url, init) {
    if (this.clockMS !== this.w.nowMS) {
      await this.control("PUT", "clock", { now_ms: this.w.nowMS });
      this.clockMS = this.w.nowMS;
    }
    const res = await fetch(`${this.url}/url/${url.replace("://", "/")}`, init);
    const during = res.headers.get("grantwire-during");
    if (during !== null) await this.onDuring?.(during);
    return res;
  }

  // open is the loopback: the user's browser, which the server says is missing
  // (interactive_required) or never comes back (timeout), or else follows the
  // authorization up to its redirect to the loopback, whose query is the callback's.
  async open(provider) {
    const { outcome } = await this.control("POST", "browser", { provider });
    if (outcome === "interactive_required") return { unavailable: "memhost: no browser: hostabi: no way to complete a browser authorization here" };
    const wait = async (url, state) => {
      if (outcome === "timeout") return null;
      const res = await this.fetch(url, { method: "GET", redirect: "manual" });
      await res.body?.cancel();
      const back = res.headers.get("location") ?? "";
      if (res.status !== 302 || !back.startsWith(REDIRECT + "?")) return null; // the user never came back
      const params = Object.fromEntries(new URL(back).searchParams);
      if (params.state !== state) throw new Error("memhost: the callback's state does not match");
      return params;
    };
    return { redirectURI: REDIRECT, close() {}, wait };
  }

  // prompt is the user reading a device code: nobody when the server says so.
  async prompt(p) {
    const { unattended } = await this.control("POST", "prompt", { provider: p.connector });
    return unattended ? "memhost: nobody to show the code to: hostabi: no way to complete a browser authorization here" : true;
  }
}
