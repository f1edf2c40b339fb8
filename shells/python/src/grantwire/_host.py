# The host ABI in Python (hostabi/README.md; package host in Go): every need and effect is a
# primitive performed without judgement over a shell's capabilities. on_fact(need, fact) and
# on_effect(effect), when set, see every exchange (the tests validate them against
# hostabi/schema).
#
# Capabilities (an object with these attributes; what a call raises is answered as a
# host_error fact, of code IO unless it is a HostError):
#   service                                  the credential-store service
#   keyring.get/set/delete(service, user[, value])   get answers None for an absent slot;
#     keyring.generation(service), optional: a token that changes with any write of the
#     service by any process (None: unknown), judging this process's memory of slots
#   files.read(name) -> (bytes, version)     (None, "") for no file; raises Refused(reason)
#   files.update(name, fn(bytes, version) -> bytes)   under the file's cross-process lock, atomic
#   files.path(name), files.digest(path, max_bytes) -> hex (raises why not)
#   locks.try_lock(name, wait_s, cancel) -> release function, or None when busy
#   clock() -> Unix ms; sleep(ms, cancel) (a simulated clock advances); entropy(n) -> bytes
#   getenv(name) -> str or None; emit({type, payload})
#   fetch(method, url, headers, body, timeout_s, max_bytes, cancel) -> (status, headers with
#     lowercase names, body bytes: at most max_bytes + 1), or raises NoResponse(why)
#   loopback.open(connector, mode) -> {"unavailable": reason}, or an object with redirect_uri,
#     close() and wait(url, state, connector, timeout_s, cancel, alternative) -> the callback's
#     query parameters, None on timeout, or False when nobody can answer any more
#   prompt(need) -> True when shown (never waits for the user), else why nobody can see it

import base64
import hashlib
import urllib.parse
import zlib

from . import _json
from ._json import Num, encode, parse, to_fact

HEADERS = ("www-authenticate", "location", "content-type", "retry-after", "cache-control")


class Canceled(Exception):
    """The caller cancelled the operation before anything was written."""


class Conflict(Exception):
    """A failed precondition: the driver decides again from fresh facts."""


class HostError(Exception):
    """A failure of the host itself, reported to the core as {"host_error": json}."""

    def __init__(self, code, detail, fix=""):
        super().__init__(detail)
        self.json = {"code": code, "detail": detail, **({"fix": fix} if fix else {})}


class Refused(Exception):
    """A file the host will not read as a ledger (the reason: README "Ledgers")."""


class NoResponse(Exception):
    """A request that got no response: timeout, refused, tls, canceled or failed."""


class Bug(Exception):
    """A malformed decision: a bug of the policy."""


def version(value):
    """The version token of a keyring value (and the digest of its description)."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float, Num)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(v)]


def _form_escape(s):
    return urllib.parse.quote_plus(s)  # as Go's url.QueryEscape: all but A-Z a-z 0-9 - . _ ~


def _io(f, *args):
    """Runs a capability: what it raises becomes a HostError (IO) unless it is one, or a Conflict."""
    try:
        return f(*args)
    except (HostError, Conflict, Refused, NoResponse):
        raise
    except Exception as e:  # noqa: BLE001 - every failure of a capability is the host's
        raise HostError("IO", str(e)) from e


class Host:
    """Serves every operation of a process and remembers the keyring slots it saw (the answer
    to keyring.get with fresh false), while the keyring's generation is unchanged."""

    def __init__(self, caps):
        self.caps, self.memory = caps, {}
        self.on_fact = self.on_effect = self.trace = None

    def begin(self):
        return Op(self)


class Op:
    def __init__(self, host):
        self.host, self.caps, self.refs, self.locks, self.callback = host, host.caps, {}, {}, None

    def describe(self, ref, value):
        """Registers a secret and answers its description."""
        self.refs[ref] = value
        return {"$ref": ref, "digest": "sha256:" + version(value), "crc32": "%08x" % zlib.crc32(value.encode())}

    def fetch(self, n, cancel):
        try:
            fact = getattr(self, "need_" + n["kind"].replace(".", "_"))(n, cancel)
        except HostError as e:
            fact = {"host_error": e.json}
        if self.host.on_fact:
            self.host.on_fact(n, fact)
        if self.host.trace:
            self.host.trace(f"==> {encode(n)}\n<== {encode(fact)}")
        return fact

    # --- needs, by kind ---
    def need_clock_now(self, n, cancel):
        return self.caps.clock()

    def need_clock_sleep(self, n, cancel):
        self.caps.sleep(n["ms"], cancel)
        return self.caps.clock()

    def need_entropy(self, n, cancel):
        raw = _io(self.caps.entropy, n["bytes"])
        return self.describe(n["key"] + "#value", base64.urlsafe_b64encode(raw).rstrip(b"=").decode())

    def need_env_get(self, n, cancel):
        v = self.caps.getenv(n["name"]) or ""
        if v == "":
            return {"found": False}
        return {"found": True, "value": self.describe(n["key"] + "#value", v) if n.get("secret") else v}

    def need_keyring_info(self, n, cancel):
        return {"service": self.caps.service}

    def need_keyring_get(self, n, cancel):
        value, found = self.slot(n["user"], n.get("fresh") is True)
        if not found:
            return {"found": False}
        fact = {"found": True, "version": version(value), "value": self.describe(n["key"] + "#value", value)}
        if "fields" in n:
            fact["json"] = self.redact(n["key"], value.encode(), n["fields"])
        return fact

    def need_ledger_read(self, n, cancel):
        fact = {"ledger": n["ledger"], "path": n.get("path", []), "file": self.caps.files.path(n["ledger"])}
        try:
            raw, ver = _io(self.caps.files.read, n["ledger"])
        except Refused as e:
            return {**fact, "found": True, "corrupt": str(e)}
        fact["found"] = raw is not None
        if raw is None:
            return fact
        try:
            v = parse(raw)
        except _json.Corrupt as e:
            return {**fact, "version": ver, "corrupt": str(e)}
        shape, exists = [_json_type(v)], True
        for k in fact["path"]:
            if not isinstance(v, dict) or k not in v:
                exists = False
                break
            v = v[k]
            shape.append(_json_type(v))
        return {**fact, "version": ver, "exists": exists, **({"value": to_fact(v)} if exists else {}), "shape": shape}

    def need_file_digest(self, n, cancel):
        try:
            return {"found": True, "sha256": _io(self.caps.files.digest, n["path"], n.get("max_bytes", 1 << 20))}
        except HostError as e:
            return {"found": False, "reason": e.json["detail"]}

    def need_lock_acquire(self, n, cancel):
        release = self.locks.get(n["name"]) or _io(self.caps.locks.try_lock, n["name"], n.get("wait_ms", 0) / 1000, cancel)
        if release:
            self.locks[n["name"]] = release
        return "held" if release else "busy"

    def need_loopback_open(self, n, cancel):
        cb = self.callback or _io(self.caps.loopback.open, n["connector"], n.get("mode", "listen"))
        if isinstance(cb, dict):
            return {"unavailable": cb["unavailable"]}
        self.callback = cb
        return {"redirect_uri": cb.redirect_uri}

    def need_loopback_wait(self, n, cancel):
        if self.callback is None:
            raise Bug("loopback.wait before loopback.open")
        url, state = self.resolve(n["url"]), self.resolve(n["state"])
        args = (url, state, n["connector"], n.get("timeout_ms", 30000) / 1000, cancel, n.get("alternative", ""))
        got = _io(self.callback.wait, *args)
        if got is None:
            return {"status": "timeout"}
        if got is False:
            return {"status": "unavailable"}
        params = {}
        for k, v in got.items():
            if k == "code":
                params[k] = self.describe(n["key"] + "#code", v)
            elif len(k.encode()) <= 64:
                params[k] = v.encode()[:512].decode(errors="replace")
        return {"status": "callback", "params": params}

    def need_prompt_show(self, n, cancel):
        shown = _io(self.caps.prompt, n) if self.caps.prompt else "this shell cannot show a device code"
        return {"shown": True} if shown is True else {"shown": False, "reason": str(shown)}

    def need_http_request(self, p, cancel):
        """Sends an HTTP request (the need, and the http.send effect) and answers the
        response, or {status: 0, error} when none came."""
        headers = {"accept": "application/json"}
        for k, t in p.get("headers", {}).items():
            if t is not None:
                headers[k.lower()] = self.resolve(t)
        body = None
        if "form" in p:
            body, headers["content-type"] = self.form(p["form"]).encode(), "application/x-www-form-urlencoded"
        if "json" in p:
            body, headers["content-type"] = encode(self.resolve(p["json"])).encode(), "application/json"
        url, limit = self.resolve(p["url"]), p.get("max_bytes", 1 << 20)
        try:
            status, got, raw = self.caps.fetch(p["method"], url, headers, body, p.get("timeout_ms", 30000) / 1000, limit, cancel)
        except NoResponse as e:
            return {"status": 0, "error": str(e)}
        fact = {"status": status, "headers": {h: _cut(got[h]) for h in HEADERS if h in got}}
        if len(raw) > limit:
            return {**fact, "json": None, "body": "too_large"}
        try:
            value = parse(raw)
        except _json.Corrupt:
            return {**fact, "json": None, "body": "empty" if raw.strip() == b"" else "not_json"}
        redacted = self.redact(p["key"], raw, p.get("secret_fields", []))
        return {**fact, "json": redacted if redacted is not None else to_fact(value)}

    def slot(self, user, fresh):
        """Reads a keyring slot, from the process's memory unless fresh (or the generation moved)."""
        gen = getattr(self.caps.keyring, "generation", None)
        gen = gen(self.caps.service) if gen else None
        mem = self.host.memory.get(user)
        if not fresh and mem is not None and mem[2] == gen:
            return mem[:2]
        v = _io(self.caps.keyring.get, self.caps.service, user)
        self.host.memory[user] = (v or "", v is not None, gen)
        return v or "", v is not None

    def redact(self, key, raw, fields):
        """A JSON object with the listed top-level string members described ("<key>#<member>");
        anything but a JSON object is None."""
        try:
            value = parse(raw)
        except _json.Corrupt:
            return None
        if not isinstance(value, dict):
            return None
        for f in fields:
            if isinstance(value.get(f), str):
                value[f] = self.describe(f"{key}#{f}", value[f])
        return to_fact(value)

    def resolve(self, t):
        """Substitutes the templates of hostabi/README.md in a parameter."""
        if isinstance(t, list):
            return [self.resolve(e) for e in t]
        if not isinstance(t, dict):
            return t
        if isinstance(t.get("$ref"), str):
            if t["$ref"] not in self.refs:
                raise Bug(f"unknown secret {t['$ref']}")
            return self.refs[t["$ref"]]
        if "$number" in t:
            return Num(t["$number"])
        if "$concat" in t:
            return "".join(self.resolve(e) for e in t["$concat"])
        if "$s256" in t:
            digest = hashlib.sha256(self.resolve(t["$s256"]).encode()).digest()
            return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if "$basic" in t:
            pair = ":".join(_form_escape(self.resolve(e)) for e in t["$basic"])
            return "Basic " + base64.b64encode(pair.encode()).decode()
        if "$url" in t:
            base, query = self.resolve(t["$url"]), self.form(t.get("query", {}))
            return base if query == "" else base + ("&" if "?" in base else "?") + query
        return {k: self.resolve(e) for k, e in t.items()}

    def form(self, q):
        """Encodes string templates as application/x-www-form-urlencoded, keys sorted, nulls left out."""
        return "&".join(f"{_form_escape(k)}={_form_escape(self.resolve(q[k]))}" for k in sorted(q) if q[k] is not None)

    def apply(self, effects, cancel):
        """Applies effects in order and stops at the first failure, undoing the transaction it
        belongs to (the undo lists of the earlier effects of its run of effects with undo, in
        reverse order). Returns None, or the Conflict or HostError that stopped it."""
        run = 0
        for i, e in enumerate(effects):
            if "undo" not in e:
                run = i + 1
            if self.host.on_effect:
                self.host.on_effect(e)
            err = self._try(e, cancel)
            if self.host.trace:
                self.host.trace(f"==> apply {encode(e)}" + (f"\n<== error {err}" if err else ""))
            if err is None:
                continue
            for u in [u for done in reversed(effects[run:i]) for u in done["undo"]] if "undo" in e else []:
                problem = self._try(u, cancel)
                if problem is not None and isinstance(err, HostError):
                    err.json["detail"] += f"\nrestoring after the failure: {problem}"
            return err
        return None

    def _try(self, e, cancel):
        try:
            self.effect(e, cancel)
            return None
        except (Conflict, HostError) as err:
            return err

    # --- effects, by kind ---
    def effect(self, e, cancel):
        kind, keyring, files = e["kind"], self.caps.keyring, self.caps.files
        if kind in ("keyring.set", "keyring.delete"):
            expect = e.get("expect")
            if expect is not None:
                value, found = self.slot(e["user"], True)
                want = expect.get("version")
                moved = want is not None and (version(value) != want if found else kind == "keyring.set")
                if moved or ("found" in expect and expect["found"] != found):
                    raise Conflict(f"{kind} of {e['user']}: the slot changed")
            v = self.resolve(e["value"]) if kind == "keyring.set" else None
            if kind == "keyring.set" and not isinstance(v, (str, dict, list)):
                raise Bug(f"keyring.set of {e['user']}: not a string or JSON")
            v = v if v is None or isinstance(v, str) else encode(v)
            if v is None:
                _io(keyring.delete, self.caps.service, e["user"])
            else:
                _io(keyring.set, self.caps.service, e["user"], v)
            gen = getattr(keyring, "generation", None)
            self.host.memory[e["user"]] = (v or "", v is not None, gen(self.caps.service) if gen else None)
        elif kind == "ledger.write":
            values = [None if op.get("delete") else self.resolve(op["value"]) for op in e["ops"]]
            path = files.path(e["ledger"])

            def patch(raw, ver):
                if e.get("version") is not None and e["version"] != ver:
                    raise Conflict(f"{path} changed since it was read")
                try:
                    doc = {} if raw is None else parse(raw)
                except _json.Corrupt as c:
                    raise HostError("IO", f"{path} became unreadable ({c}); nothing was written") from None
                for op, value in zip(e["ops"], values):
                    cur, x = _get(doc, op["path"]), op.get("expect", {})
                    changed = "value" in x and (cur is _ABSENT or encode(cur, facts=True) != encode(x["value"], facts=True))
                    if (cur is not _ABSENT) if x.get("exists") is False else changed:
                        raise Conflict(f"{path} {encode(op['path'])} changed")
                    doc = _remove(doc, op["path"], op.get("prune")) if op.get("delete") else _set(doc, op["path"], value, e["ledger"])
                return (encode(doc, "  ") + "\n").encode()

            try:
                _io(files.update, e["ledger"], patch)
            except Refused as r:
                raise HostError("IO", f"{path} is {r}") from None
        elif kind == "lock.release":
            release = self.locks.pop(e["name"], None)
            if release:
                release()
        elif kind == "event.emit":
            self.caps.emit({"type": e["type"], "payload": e["payload"]})
        elif kind == "http.send":
            self.need_http_request({**e, "key": "send"}, cancel)  # best effort: the outcome is ignored

    def end(self):
        """Releases the locks the operation still holds and closes its loopback listener."""
        for name in sorted(self.locks):
            self.locks[name]()
            if self.host.trace:
                self.host.trace(f"release {name}")
        self.locks.clear()
        if self.callback is not None:
            self.callback.close()


def _cut(v):
    return v[:4096] + "…" if len(v) > 4096 else v


_ABSENT = object()


def _get(doc, path):
    for k in path:
        if not isinstance(doc, dict) or k not in doc:
            return _ABSENT
        doc = doc[k]
    return doc


def _set(doc, path, v, ledger):
    """Puts v at path inside doc, creating objects on the way."""
    if not path:
        return v
    if doc is not None and doc is not _ABSENT and not isinstance(doc, dict):
        raise HostError("IO", f"host: ledger.write {ledger}: cannot write inside a {_json_type(doc)}")
    doc = doc if isinstance(doc, dict) else {}
    doc[path[0]] = _set(doc.get(path[0], _ABSENT), path[1:], v, ledger)
    return doc


def _remove(doc, path, prune):
    """Deletes the value at path (absent is fine); prune removes its parent object when the
    deletion leaves it empty."""
    if not isinstance(doc, dict) or path[0] not in doc:
        return doc
    if len(path) == 1:
        del doc[path[0]]
        return doc
    child = _remove(doc[path[0]], path[1:], prune)
    if prune and len(path) == 2 and isinstance(child, dict) and not child:
        del doc[path[0]]
    return doc
