"""grantwire's conformance corpus (conformance/corpus/*.yaml) on the Python shell: policy.wasm on
wasmtime (grantwire._engine), the Python driver and host, and the in-memory world
(memworld.py) whose authorization server is the Go test worlds' one, reached over HTTP. Every
expectation is checked as the Go runner (conformance/run.go, stage.go, step.go, final.go) and
the Node runner (shells/wasm/node/run.mjs) check it, and the world is staged in the same
order, so the Python host answers every need as the Go host does. test_corpus.py runs it."""

import json
import pathlib
import zlib

from memworld import World
from ruamel.yaml import YAML

from grantwire import _driver
from grantwire._engine import Engine
from grantwire._host import Host
from grantwire._json import Num, encode

SHELL = "python/wasmtime"
DEFAULT_CLOCK = 1_790_000_000_000
SERVICE = "grantwire.connections"
LEDGERS = {"grants": "connectors/grants.json", "activations": "connectors/activations.json", "state": "connectors/state.json",
           "mcp_servers": "mcp_servers.json", "agents": "agents.json"}


def connection_user(p):
    return f"{p}:default"


def client_user(p):
    return f"provider:{p}"


def client_id_hash(client_id):
    return "%08x" % zlib.crc32(client_id.encode())


def keys(m):
    return sorted(m or {})


def compact(v):
    """JSON as JavaScript's JSON.stringify writes it (the text expectations' contains/excludes search)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def go_json(members):
    """json.Marshal of a Go struct: members in declaration order, HTML characters escaped."""
    text = "{" + ",".join(encode(k) + ":" + encode(v) for k, v in members.items()) + "}"
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def ledger_text(doc):
    return encode(doc, "  ") + "\n"


def subset(want, got, path=""):
    """conformance.Subset: "" when want is a subset of got (objects by key, arrays by index with
    the same length), else where it is not."""
    at = path or "."
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"at {at}: got {compact(got)}, want {len(want)} elements like {compact(want)}"
        return next((m for i, w in enumerate(want) if (m := subset(w, got[i], f"{path}[{i}]"))), "")
    if not isinstance(want, dict):
        return "" if same(want, got) else f"at {at}: got {compact(got)}, want {compact(want)}"
    if not isinstance(got, dict):
        return f"at {at}: got {compact(got)}, want an object"
    for k in sorted(want):
        if k not in got:
            return f"at {at}: missing {json.dumps(k)}"
        if m := subset(want[k], got[k], f"{path}.{k}"):
            return m
    return ""


def same(a, b):
    """JSON equality: 1 and 1.0 are one number, true is not 1."""
    def norm(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return {k: norm(e) for k, e in v.items()} if isinstance(v, dict) else [norm(e) for e in v] if isinstance(v, list) else v
    return json.dumps(norm(a), sort_keys=True) == json.dumps(norm(b), sort_keys=True)


def merge_patch(doc, patch):
    """A JSON merge patch (RFC 7386); no patch (None) leaves the document."""
    if patch is None:
        return doc or {}
    if not isinstance(patch, dict):
        return patch
    out = dict(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def load(folder):
    """Every *.yaml of the folder as conformance.Load reads it (exceptions.yaml is the exceptions
    table): (files [(name, document)], exceptions, scenarios sorted by id)."""
    yaml, files, exceptions, seen, scenarios = YAML(typ="safe", pure=True), [], {}, {}, []
    for f in sorted(pathlib.Path(folder).glob("*.yaml")):
        doc = yaml.load(f.read_text())
        if f.name == "exceptions.yaml":
            exceptions = doc or {}
            continue
        if doc.get("family") != f.stem:
            raise ValueError(f"conformance: {f.name}: family must be {f.stem!r}")
        for i, s in enumerate(doc.get("scenarios") or []):
            name = s.get("name")
            if not isinstance(name, str) or not name or "/" in name or " " in name:
                raise ValueError(f"conformance: {f.name}: scenario {i}: name must be non-empty, without spaces or slashes")
            sid = f"{f.stem}/{name}"
            if sid in seen:
                raise ValueError(f"conformance: {f.name}: scenario {sid} already in {seen[sid]}")
            seen[sid] = f.name
            check(sid, s)
            scenarios.append({**s, "id": sid, "family": f.stem, "spec": merge_patch(doc.get("base"), s.get("world"))})
        files.append((f.name, doc))
    for sid in exceptions:
        if sid not in seen:
            raise ValueError(f"conformance: exceptions.yaml names unknown scenario {sid}")
    return files, exceptions, sorted(scenarios, key=lambda s: s["id"])


def check(sid, s):
    """Refuses a scenario that asserts nothing (Scenario.check)."""
    def fail(m):
        raise ValueError(f"conformance: {sid}: {m}")
    if not s.get("behaviour"):
        fail("no behaviour: say which rule of docs/behaviour.md it checks")
    if not s.get("steps"):
        fail("no steps")
    if not isinstance((s.get("final") or {}).get("events"), list):
        fail("no final.events: every scenario states the events it emits ([] for none)")
    for i, st in enumerate(s["steps"]):
        x = st.get("expect")
        if st.get("op") and st.get("world"):
            fail(f"step {i}: an operation or a world action, not both")
        if not st.get("op") and not st.get("world"):
            fail(f"step {i}: neither an operation nor a world action")
        if st.get("op") and not x:
            fail(f"step {i} ({st['op']}): no expect")
        if x and x.get("host_error") and ("error" in x or "result" in x):
            fail(f"step {i} ({st['op']}): a host error has no result or error object")
        if x and "error" in x and "result" in x:
            fail(f"step {i} ({st['op']}): expects both a result and an error")


def encode_client(c):
    if isinstance(c.get("blob"), str):
        return c["blob"]
    return go_json({"client_id": c.get("client_id", ""), "client_secret": c.get("client_secret", ""),
                    **({"tenant": c["tenant"]} if c.get("tenant") is not None else {})})


class Runner:
    """One scenario on a fresh world, whose authorization server plays the catalog's providers."""

    def __init__(self, hub, s, engine, catalog, watch):
        self.s, self.ws, self.engine, self.catalog, self.watch = s, s["spec"], engine, catalog, watch
        self.world = World(hub, self.ws.get("clock") or DEFAULT_CLOCK)
        self.world.server.on_during = lambda i: self.durings[int(i)]()
        self.caps = self.world.capabilities(SERVICE)
        self.procs, self.agents, self.secrets, self.users, self.texts, self.failures, self.durings = {}, {}, set(), set(), [], [], []
        self.world.server.script({"providers": catalog["connectors"]})

    def failf(self, m):
        self.failures.append(m)

    def secret(self, v):
        if isinstance(v, str) and len(v.encode()) >= 6:
            self.secrets.add(v)

    def set_keyring(self, user, value):
        """Writes (None: deletes) a keyring slot, as another process would."""
        self.users.add(user)
        self.caps.keyring.delete(SERVICE, user) if value is None else self.caps.keyring.set(SERVICE, user, value)

    def write_ledger(self, name, text):
        """Writes a ledger byte for byte, as another process would."""
        self.caps.files.update(LEDGERS[name], lambda *_: text.encode())

    def process(self, name="A"):
        if name not in self.procs:
            h = self.procs[name] = Host(self.caps)
            h.trace = self.texts.append
            self.watch(h)
        return self.procs[name]

    def stage(self):
        """Builds the initial world in the order of the Go runner's stage()."""
        ws = self.ws
        if ws.get("mcp_env"):
            servers = {}
            for c in keys(ws["mcp_env"]):
                env = {}
                for k in keys(ws["mcp_env"][c]):
                    self.set_keyring(f"{c}:{k}", ws["mcp_env"][c][k])
                    self.secret(ws["mcp_env"][c][k])
                    env[k] = {"$keyring": f"{SERVICE}:{c}:{k}"}
                spec = self.catalog["connectors"].get(c, {})
                servers[c] = {"command": spec.get("command", ""), "args": spec.get("args", []), "env": env}
            self.write_ledger("mcp_servers", ledger_text({"mcpServers": servers}))
        for name in keys(ws.get("ledgers")):
            self.write_ledger(name, ledger_text(ws["ledgers"][name]))
        for name in keys(ws.get("raw_ledgers")):
            self.write_ledger(name, ws["raw_ledgers"][name])
        ts = ws.get("token_server")
        if ts:
            for p in keys(ts.get("issued")):
                for rt in ts["issued"][p]:
                    self.secret(rt)
            piece = {"rotate": ts.get("rotate") is not False, "expires_in": ts.get("expires_in") or 3600}
            self.world.server.script({**piece, **{k: ts[k] for k in ("client_auth", "revoke", "issued") if k in ts}})
        self.act({"set_connections": ws.get("connections"), "set_clients": ws.get("clients"), "hold": ws.get("locks"), "set_agents": ws.get("agents")})
        self.world.env.update(ws.get("env") or {})
        if ts:
            self.act({"script_refresh": ts.get("refresh"), "script_authorize": ts.get("authorize")})
        for p in keys(ws.get("cached_clients")):
            self.process("A").memory[client_user(p)] = (encode_client(ws["cached_clients"][p]), True, None)
        self.act({"keyring_failures": ws.get("keyring_failures")})

    def encode_connection(self, p, c):
        if isinstance(c.get("blob"), str):
            return c["blob"]
        at = c.get("connected_at_ms") or self.world.now_ms - 86_400_000
        return go_json({"account_email": c.get("account") or "user@example.com",
                        "client_id_hash": c.get("client_id_hash") or client_id_hash(c.get("client_id") or ""),
                        "connected_at": Num(f"{at // 1000}.{at % 1000:03d}"), "refresh_token": c.get("refresh_token") or f"rt-{p}-staged",
                        "scopes": c.get("scopes") or [], **{k: c[k] for k in ("tenant", "account_type") if c.get(k) is not None}})

    def agents_file(self):
        """The world's agents as agents.json (the Go runner's agentsFile)."""
        out = []
        for i in keys(self.agents):
            a = self.agents[i]
            reqs = [{"connector": c, "scopes": a["required_connectors"][c]} for c in keys(a.get("required_connectors"))]
            out.append({"id": i, **({"name": a["name"]} if a.get("name") else {}),
                        **({"consumes_mcp_servers": True} if a.get("consumes_mcp_servers") else {}), **({"required_connectors": reqs} if reqs else {})})
        return ledger_text({"version": 1, "agents": out})

    def act(self, a):
        """Applies a world action (staging uses it too), in the order of the Go runner's act(); what
        it tells the authorization server goes in one piece of script, at the end."""
        script = {"issued": {}, "refresh": {}, "authorize": {}}
        self.world.now_ms += a.get("advance_ms") or 0
        for p in keys(a.get("set_connections")):
            if (c := a["set_connections"][p]) is None:
                self.set_keyring(connection_user(p), None)
                continue
            blob = self.encode_connection(p, c)
            self.set_keyring(connection_user(p), blob)
            try:
                rt = json.loads(blob).get("refresh_token") or ""
            except (ValueError, AttributeError):
                rt = ""  # a corrupt blob holds no token
            if isinstance(rt, str) and rt:
                self.secret(rt)
                if c.get("live") is not False:
                    script["issued"].setdefault(p, []).append(rt)
        for p in keys(a.get("set_clients")):
            c = a["set_clients"][p]
            self.secret((c or {}).get("client_secret"))
            self.set_keyring(client_user(p), None if c is None else encode_client(c))
        for name in keys(a.get("set_ledgers")):
            self.write_ledger(name, ledger_text(a["set_ledgers"][name]))
        for name in keys(a.get("set_raw_ledgers")):
            self.write_ledger(name, a["set_raw_ledgers"][name])
        self.world.holders.update(a.get("hold") or {})
        for lock in a.get("release") or []:
            self.world.holders.pop(lock, None)
        if a.get("set_agents"):
            self.agents.update(a["set_agents"])
            self.write_ledger("agents", self.agents_file())
        for what, queue in (("script_refresh", "refresh"), ("script_authorize", "authorize")):
            for p in keys(a.get(what)):
                for x in a[what][p]:
                    self.secret(x.get("access_token"))
                    self.secret(x.get("refresh_token"))
                    if x.get("during"):
                        x = {**x, "during": self.during(x["during"])}
                    script[queue].setdefault(p, []).append(x)
        for f in a.get("keyring_failures") or []:
            self.users.add(f["user"])
            self.world.failures.append({**f, "count": f.get("count") or 1})
        if any(script.values()):
            self.world.server.script({k: v for k, v in script.items() if v})

    def during(self, action):
        """The id of a world action performed while a refresh is in flight (Grantwire-During)."""
        def do():
            try:
                self.act(action)
            except Exception as e:  # noqa: BLE001 - reported as the scenario's failure
                self.failf(f"during a refresh: {e}")
        self.durings.append(do)
        return str(len(self.durings) - 1)

    def expand(self, x):
        """Replaces "{{path:<ledger>}}" in the expectation with this shell's path of that ledger."""
        s = json.dumps(x)
        for name in keys(LEDGERS):
            s = s.replace("{{path:" + name + "}}", json.dumps(self.caps.files.path(LEDGERS[name]))[1:-1])
        return json.loads(s)

    def step(self, i, st):
        for v in (st.get("secrets") or {}).values():
            self.secret(v)
        if st["op"] == "configure_mcp":
            self.users.update(f"{(st.get('args') or {}).get('connector', '')}:{k[4:]}" for k in st.get("secrets") or {} if k.startswith("env."))
        where = f"step {i} ({st['op']})"
        try:
            out = _driver.run(self.engine, self.process(st.get("process") or "A"), st["op"], st.get("args") or {}, st.get("secrets") or {})
        except Exception as e:  # noqa: BLE001 - reported as the scenario's failure
            return self.failf(f"{where}: the driver failed: {e!r}")
        x = self.expand(st["expect"])
        if x.get("host_error"):
            if out.error is None:
                self.failf(f"{where}: expected a host failure {x['host_error']!r}, got result {compact(out.result)}")
            elif not out.host_failure:
                self.failf(f"{where}: expected a host failure {x['host_error']!r}, got the decision error {compact(out.error)}")
            elif x["host_error"] not in out.error["message"]:
                self.failf(f"{where}: host failure {out.error['message']!r} does not contain {x['host_error']!r}")
            if out.error is not None:
                self.texts.append(out.error["message"])
            return None
        if out.error is not None:
            body = compact(out.error)
            if "error" not in x:
                return self.failf(f"{where}: unexpected error {body}")
            (self.equal if x.get("error_exact") else self.subset)(f"{where}: error", x["error"], out.error)
            info = self.engine.manifest.get("errors", {}).get(out.error["code"])
            if info is None:
                self.failf(f"{where}: error code {out.error['code']} is not in the policy's error table")
            for field, what in (("status", "REST status"), ("exit", "CLI exit")):
                if x.get(field) and (info or {}).get(field) != x[field]:
                    self.failf(f"{where}: {out.error['code']} has {what} {(info or {}).get(field)}, want {x[field]}")
        else:
            body = json.dumps(out.result, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            if "error" in x:
                return self.failf(f"{where}: expected error {compact(x['error'])}, got result {body}")
            if "result" in x:
                self.subset(f"{where}: result", x["result"], out.result)
            self.resolve_all(out)
        self.texts.append(body)
        for s in x.get("contains") or []:
            if s not in body:
                self.failf(f"{where}: {body} does not contain {s!r}")
        for s in x.get("excludes") or []:
            if s in body:
                self.failf(f"{where}: {body} contains {s!r}")
        for path, want in (x.get("resolved") or {}).items():
            v = out.error if out.error is not None else out.result
            for part in path.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if not isinstance(v, dict) or not isinstance(v.get("$ref"), str) or not v["$ref"]:
                self.failf(f"{where}: result {body} has no secret reference at {path}")
            elif (got := resolve(out, v["$ref"])) != want:
                self.failf(f"{where}: {path} resolves to {got or ''!r}, want {want!r}")
        if "rounds" in x and out.rounds != x["rounds"]:
            self.failf(f"{where}: took {out.rounds} rounds, want {x['rounds']}")
        return None

    def resolve_all(self, out):
        """Resolves every secret reference of a result, so the values are checked for leaks."""
        def walk(v):
            if isinstance(v, list):
                return [walk(e) for e in v]
            if not isinstance(v, dict):
                return None
            if isinstance(v.get("$ref"), str) and len(v) == 1:
                s = resolve(out, v["$ref"])
                return self.secret(s) if s is not None else self.failf(f"result reference {v['$ref']!r} does not resolve")
            return [walk(e) for e in v.values()]
        walk(out.result)

    def keyring_get(self, user):
        self.users.add(user)
        return self.world.keyring.get((SERVICE, user))

    def final(self):
        f = self.s["final"]
        for name in ("grants", "activations", "state", "mcp_servers"):
            raw = self.world.files.get(LEDGERS[name])
            doc = None if raw is None else raw.decode()
            self.texts.append(doc or "")
            if name in (f.get("ledgers") or {}):
                want = f["ledgers"][name]
                if want is None and doc is not None:
                    self.failf(f"final: ledger {name} exists: {doc}")
                elif want is not None and doc is None:
                    self.failf(f"final: ledger {name} is absent, want {compact(want)}")
                elif want is not None:
                    try:
                        self.equal(f"final: ledger {name}", want, json.loads(doc))
                    except ValueError as e:
                        self.failf(f"final: ledger {name}: malformed JSON ({e})")
            if name in (f.get("raw_ledgers") or {}) and (doc or "") != f["raw_ledgers"][name]:
                self.failf(f"final: ledger {name} is {doc or ''!r}, want exactly {f['raw_ledgers'][name]!r}")
        for what, user, wants in (("connection", connection_user, f.get("connections")), ("client", client_user, f.get("clients"))):
            for p in keys(wants):
                self.blob(what, user(p), wants[p])
        for u in keys(f.get("keyring_values")):
            if (got := self.keyring_get(u)) != f["keyring_values"][u]:
                self.failf(f"final: keyring {u} = {got or ''!r}, want the value staged")
        for p in keys(self.catalog["connectors"]):  # every stored token is a secret too (tokens issued during the steps)
            self.users.add(client_user(p))
            for user, field in ((f"{p}:access_token", "access_token"), (connection_user(p), "refresh_token")):
                try:
                    self.secret(json.loads(self.keyring_get(user) or "null")[field])
                except (ValueError, TypeError, KeyError):
                    pass  # absent or not JSON
        if isinstance(f.get("keyring"), list):
            have, want = sorted(self.world.users(SERVICE)), sorted(f["keyring"])
            if have != want:
                self.failf(f"final: keyring holds {compact(have)}, want {compact(want)}")
        srv, ts = self.world.server.counters(), f.get("token_server") or {}
        for field, what in (("requests", "the token endpoint got {} refresh requests"), ("exchanges", "the token endpoint got {} code exchanges"),
                            ("revocations", "the revocation endpoint got {} requests"), ("revoked", "the revocation endpoint revoked {} tokens")):
            if field in ts and srv[field] != ts[field]:
                self.failf(f"final: {what.format(srv[field])}, want {ts[field]}")
        if "client_auth" in ts and srv["client_auth"] != ts["client_auth"]:
            self.failf(f"final: the token endpoint saw the client authenticate with {compact(srv['client_auth'])}, want {compact(ts['client_auth'])}")
        got = [{"type": e["type"], "payload": e["payload"]} for e in self.world.events]
        self.texts.append(compact(got))
        self.equal("final: events", f["events"], got)
        for s in sorted(self.secrets):  # a secret appears in no result, error, event, ledger file or host-call transcript
            text = next((t for t in self.texts if s in t), None)
            if text is not None:
                self.failf(f"secret leaked: {s!r} appears in {text[:200]}")

    def blob(self, what, user, want):
        got = self.keyring_get(user)
        if want is None:
            return self.failf(f"final: {what} {user} exists, want none") if got is not None else None
        if got is None:
            return self.failf(f"final: no {what} {user}, want {compact(want)}")
        w = dict(want)
        if what == "connection" and isinstance(w.get("client_id"), str):
            w["client_id_hash"] = client_id_hash(w.pop("client_id"))
        try:
            self.subset(f"final: {what} {user}", w, json.loads(got))
        except ValueError as e:
            self.failf(f"final: {what} {user}: malformed JSON ({e})")
        return None

    def equal(self, where, want, got):
        if not same(want, got):
            self.failf(f"{where}:\n got  {compact(got)}\n want {compact(want)}")

    def subset(self, where, want, got):
        if m := subset(want, got):
            self.failf(f"{where}: {m}\n got  {compact(got)}\n want {compact(want)}")


def resolve(out, ref):
    try:
        return out.secret(ref)
    except KeyError:
        return None


class Corpus:
    """The corpus on one control API (hub): engines cached per catalog; watch(engine or host)
    validates and records what they exchange."""

    def __init__(self, repo, hub, watch):
        self.repo, self.hub, self.watch, self.engines = pathlib.Path(repo), hub, watch, {}
        self.base = json.loads((self.repo / "conformance" / "corpus" / "catalog.json").read_text())
        self.files, self.exceptions, self.scenarios = load(self.repo / "conformance" / "corpus")

    def engine(self, data):
        key = json.dumps(data, sort_keys=True)
        if key not in self.engines:
            self.engines[key] = (len(self.engines), Engine(data))
        return self.engines[key]

    def run(self, s, on_data=None):
        """Runs one scenario: its failures."""
        catalog = merge_patch(self.base, s["spec"].get("catalog"))
        if not catalog.get("connectors"):
            raise ValueError(f"{s['id']}: catalog: no connectors")
        data = {"catalog": {"connectors": catalog["connectors"]}}
        data_id, engine = self.engine(data)
        on_data and on_data(data_id, data)
        self.watch(engine)
        r = Runner(self.hub, s, engine, catalog, self.watch)
        try:
            r.stage()
            for i, st in enumerate(s["steps"]):
                r.act(st["world"]) if st.get("world") else r.step(i, st)
            r.final()
        finally:
            r.world.server.close()
        return r.failures
