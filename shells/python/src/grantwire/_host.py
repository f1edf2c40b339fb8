# The host ABI in Python (hostabi/README.md; package host in Go): every need and effect is a
# primitive performed without judgement over a shell's capabilities. trace(line), when set,
# receives one line per host call: "==> <need>\n<== <fact>", "==> apply <effect>" (then
# "\n<== error <why>" when it failed) and "release <lock>", the JSON as the Go host's
# transcripts carry it (the tests validate it against hostabi/schema).
#
# Capabilities (an object with these attributes; what a call raises is answered as a
# host_error fact, of code IO unless it is a HostError):
#   service                                  the credential-store service
#   keyring.get/set/delete(service, user[, value])   get answers None for an absent slot;
#     keyring.generation(service): a token that changes with any write of the service by any
#     process (None: only this process writes it), judging this process's memory of slots
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

from ._json import Corrupt, Num, encode, parse

HEADERS = ("www-authenticate", "location", "content-type", "retry-after", "cache-control", "dpop-nonce")


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
    """A request that got no response: timeout, refused, tls, canceled or failed (the message)."""


def version(value):
    """The version token of a keyring value (and the digest of its description)."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _type(v):
    return "null" if v is None else "boolean" if isinstance(v, bool) else "number" if isinstance(v, (int, float, Num)) else \
        {str: "string", list: "array", dict: "object"}[type(v)]


def _io(f, *args):
    """Runs a capability: what it raises becomes a HostError (IO) unless it is one, or a Conflict."""
    try:
        return f(*args)
    except (HostError, Conflict, Refused, NoResponse, Canceled):
        raise
    except Exception as e:  # noqa: BLE001 - every other failure of a capability is the host's
        raise HostError("IO", str(e)) from e


def _b64url(raw): return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


_EC = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


def sign_jwt(pem, header, claims, algs):
    """The "$jwt" template (hostabi/README.md; host/jwt.go): claims signed with a PEM private key
    (PKCS #8, SEC 1 or PKCS #1) under its algorithm (ES256/384/512, RS256), which must be in algs
    when algs is not empty. Needs the cryptography package (the keyring's SecretStorage brings it
    on Linux). Errors never carry the key."""
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils
    except ImportError:
        raise ValueError("host: $jwt needs the cryptography package (pip install cryptography)") from None
    try:
        k = serialization.load_pem_private_key(pem.encode(), password=None)
    except Exception:  # noqa: BLE001 - what it says may quote the key
        raise ValueError("host: the private key is not PEM (PKCS #8, SEC 1 or PKCS #1)") from None
    alg = "RS256" if isinstance(k, rsa.RSAPrivateKey) else _EC.get(k.curve.name) if isinstance(k, ec.EllipticCurvePrivateKey) else None
    if alg is None:
        raise ValueError("host: the private key is neither EC (P-256, P-384, P-521) nor RSA")
    if algs and alg not in algs:
        raise ValueError(f"host: the private key signs {alg}, and the server accepts only {' '.join(algs)}")
    data = (_b64url(encode({**header, "alg": alg}).encode()) + "." + _b64url(encode(claims).encode())).encode()
    h = {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}[alg[2:]]
    if alg == "RS256":
        return data.decode() + "." + _b64url(k.sign(data, padding.PKCS1v15(), h))
    r, sv = utils.decode_dss_signature(k.sign(data, ec.ECDSA(h)))
    n = (k.curve.key_size + 7) // 8
    return data.decode() + "." + _b64url(r.to_bytes(n, "big") + sv.to_bytes(n, "big"))


def _json(raw):
    """A JSON document as facts carry it, or Corrupt (the class) when it is not JSON."""
    try:
        return parse(raw, facts=True)
    except Corrupt:
        return Corrupt


class Host:
    """Serves every operation of a process and remembers the keyring slots it saw (the answer
    to keyring.get with fresh false) while the keyring's generation is unchanged."""

    def __init__(self, caps): self.caps, self.memory, self.trace = caps, {}, lambda line: None

    def begin(self): return Op(self)


class Op:
    def __init__(self, host): self.host, self.caps, self.refs, self.locks, self.callback = host, host.caps, {}, {}, None

    def describe(self, ref, value):
        """Registers a secret and answers its description."""
        self.refs[ref] = value
        return {"$ref": ref, "digest": "sha256:" + version(value), "crc32": "%08x" % zlib.crc32(value.encode())}

    def fetch(self, n, cancel):
        try:
            fact = getattr(self, "need_" + n["kind"].replace(".", "_"))(n, cancel)
        except HostError as e:
            fact = {"host_error": e.json}
        self.host.trace(f"==> {encode(n)}\n<== {encode(fact)}")
        return fact

    # --- needs, by kind (a simulated clock advances instead of sleeping) ---
    def need_clock_now(self, n, cancel): return self.caps.clock()

    def need_clock_sleep(self, n, cancel): return self.caps.sleep(n["ms"], cancel) or self.caps.clock()

    def need_entropy(self, n, cancel): return self.describe(n["key"] + "#value", _b64url(_io(self.caps.entropy, n["bytes"])))

    def need_keyring_info(self, n, cancel): return {"service": self.caps.service}

    def need_env_get(self, n, cancel):
        v = self.caps.getenv(n["name"]) or ""
        return {"found": True, "value": self.describe(n["key"] + "#value", v) if n.get("secret") else v} if v else {"found": False}

    def need_keyring_get(self, n, cancel):
        value, found = self.slot(n["user"], n.get("fresh") is True)
        if not found:
            return {"found": False}
        fact = {"found": True, "version": version(value), "value": self.describe(n["key"] + "#value", value)}
        if "fields" in n:  # null unless the value is a JSON object
            fact["json"] = self.redact(n["key"], doc, n["fields"]) if isinstance(doc := _json(value.encode()), dict) else None
        return fact

    def need_ledger_read(self, n, cancel):
        fact = {"ledger": n["ledger"], "path": n.get("path", []), "file": self.caps.files.path(n["ledger"]), "found": True}
        try:
            raw, ver = _io(self.caps.files.read, n["ledger"])
            if raw is None:
                return {**fact, "found": False}
            fact["version"] = ver
            v = parse(raw, facts=True)
        except (Refused, Corrupt) as e:  # a file refused as it is has no version
            return {**fact, "corrupt": str(e)}
        fact["shape"] = [_type(v)]
        for k in fact["path"]:
            if not isinstance(v, dict) or k not in v:
                return {**fact, "exists": False}
            v = v[k]
            fact["shape"].append(_type(v))
        return {**fact, "exists": True, "value": v}

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
        self.callback = None if isinstance(cb, dict) else cb  # a dict: nobody can authorize that way here
        return {"unavailable": cb["unavailable"]} if isinstance(cb, dict) else {"redirect_uri": cb.redirect_uri}

    def need_loopback_wait(self, n, cancel):
        args = (self.resolve(n["url"]), self.resolve(n["state"]), n["connector"], n.get("timeout_ms", 30000) / 1000, cancel, n.get("alternative", ""))
        got = _io(self.callback.wait, *args)  # the policy opens the loopback first
        if got is None or got is False:
            return {"status": "timeout" if got is None else "unavailable"}
        params = {k: self.describe(n["key"] + "#code", v) if k == "code" else v.encode()[:512].decode(errors="replace")
                  for k, v in got.items() if k == "code" or len(k.encode()) <= 64}
        return {"status": "callback", "params": params}

    def need_prompt_show(self, n, cancel):
        shown = _io(self.caps.prompt, n)
        return {"shown": True} if shown is True else {"shown": False, "reason": str(shown)}

    # This shell creates no DPoP keys (RFC 9449): a clear host error, never a key.
    def need_dpop_key(self, n, cancel): raise HostError("IO", "this shell cannot create DPoP keys (RFC 9449); authorize remote MCP servers whose authorization server takes DPoP with the Go shell (grantwire mcp auth)")

    def need_http_request(self, p, cancel):
        """Sends an HTTP request (the need, and the http.send effect): the response, or {status: 0, error}."""
        headers = {"accept": "application/json", **{k.lower(): self.resolve(t) for k, t in p.get("headers", {}).items() if t is not None}}
        body, limit = None, p.get("max_bytes", 1 << 20)
        if "form" in p:
            body, headers["content-type"] = self.form(p["form"]).encode(), "application/x-www-form-urlencoded"
        if "json" in p:
            body, headers["content-type"] = encode(self.resolve(p["json"])).encode(), "application/json"
        try:
            status, got, raw = self.caps.fetch(p["method"], self.resolve(p["url"]), headers, body, p.get("timeout_ms", 30000) / 1000, limit, cancel)
        except NoResponse as e:
            return {"status": 0, "error": str(e)}
        fact = {"status": status, "headers": {h: got[h][:4096] + ("…" if len(got[h]) > 4096 else "") for h in HEADERS if h in got}}
        if len(raw) > limit:
            return {**fact, "json": None, "body": "too_large"}
        if (v := _json(raw)) is Corrupt:
            return {**fact, "json": None, "body": "empty" if raw.strip() == b"" else "not_json"}
        return {**fact, "json": self.redact(p["key"], v, p.get("secret_fields", []))}

    def slot(self, user, fresh):
        """Reads a keyring slot, from the process's memory unless fresh (or the generation moved)."""
        gen, mem = self.caps.keyring.generation(self.caps.service), self.host.memory.get(user)
        if fresh or mem is None or mem[2] != gen:
            v = _io(self.caps.keyring.get, self.caps.service, user)
            mem = self.host.memory[user] = (v or "", v is not None, gen)
        return mem[:2]

    def redact(self, key, v, fields):
        """A JSON value with the listed top-level string members of an object described ("<key>#<member>")."""
        return {k: self.describe(f"{key}#{k}", e) if k in fields and isinstance(e, str) else e for k, e in v.items()} if isinstance(v, dict) else v

    def resolve(self, t):
        """Substitutes the templates of hostabi/README.md in a parameter."""
        if isinstance(t, list):
            return [self.resolve(e) for e in t]
        if not isinstance(t, dict):
            return t
        if isinstance(t.get("$ref"), str):
            return self.refs[t["$ref"]]  # an unknown reference is a bug of the policy (KeyError)
        if "$number" in t:
            return Num(t["$number"])
        if "$concat" in t:
            return "".join(self.resolve(e) for e in t["$concat"])
        if "$s256" in t:
            return _b64url(hashlib.sha256(self.resolve(t["$s256"]).encode()).digest())
        if "$basic" in t:  # RFC 6749 §2.3.1: each part form-encoded
            return "Basic " + base64.b64encode(":".join(urllib.parse.quote_plus(self.resolve(e)) for e in t["$basic"]).encode()).decode()
        if "$jwt" in t:
            j = t["$jwt"]
            return sign_jwt(self.resolve(j["key"]), self.resolve(j.get("header", {})), self.resolve(j["claims"]), j.get("algs") or [])
        if "$url" in t:
            base, query = self.resolve(t["$url"]), self.form(t.get("query", {}))
            return base + ("&" if "?" in base else "?") + query if query else base
        return {k: self.resolve(e) for k, e in t.items()}

    def form(self, q):
        """application/x-www-form-urlencoded of string templates, keys sorted, nulls left out (as Go's url.Values)."""
        return "&".join(f"{urllib.parse.quote_plus(k)}={urllib.parse.quote_plus(self.resolve(q[k]))}" for k in sorted(q) if q[k] is not None)

    def apply(self, effects, cancel):
        """Applies effects in order and stops at the first failure, undoing the transaction it
        belongs to (the undo lists of the earlier effects of its run of effects with undo, in
        reverse order). Returns None, or the Conflict or HostError that stopped it."""
        run = 0
        for i, e in enumerate(effects):
            run = run if "undo" in e else i + 1
            err = self.effect(e, cancel)
            self.host.trace(f"==> apply {encode(e)}" + (f"\n<== error {err}" if err else ""))
            if err is not None:
                for u in [u for done in reversed(effects[run:i]) for u in done["undo"]] if "undo" in e else []:
                    if (problem := self.effect(u, cancel)) and isinstance(err, HostError):
                        err.json["detail"] += f"\nrestoring after the failure: {problem}"
                return err
        return None

    def effect(self, e, cancel):
        """Applies one effect: None, or the Conflict or HostError that stopped it."""
        try:
            getattr(self, "effect_" + e["kind"].replace(".", "_"))(e, cancel)
        except (Conflict, HostError) as err:
            return err
        return None

    # --- effects, by kind ---
    def effect_keyring_set(self, e, cancel):
        keyring, expect, user = self.caps.keyring, e.get("expect"), e["user"]
        if expect is not None:
            value, found = self.slot(user, True)
            want = expect.get("version")
            if (want is not None and (version(value) != want if found else e["kind"] == "keyring.set")) or expect.get("found", found) != found:
                raise Conflict(f"{e['kind']} of {user}: the slot changed")
        v = self.resolve(e["value"]) if e["kind"] == "keyring.set" else None
        v = v if v is None or isinstance(v, str) else encode(v)  # a JSON value, serialised as the Go host does
        _io(keyring.set, self.caps.service, user, v) if v is not None else _io(keyring.delete, self.caps.service, user)
        self.host.memory[user] = (v or "", v is not None, keyring.generation(self.caps.service))

    effect_keyring_delete = effect_keyring_set

    def effect_ledger_write(self, e, cancel):
        path = self.caps.files.path(e["ledger"])

        def patch(raw, ver):
            if e.get("version") is not None and e["version"] != ver:
                raise Conflict(f"{path} changed since it was read")
            try:
                doc = {} if raw is None else parse(raw)
            except Corrupt as c:
                raise HostError("IO", f"{path} became unreadable ({c}); nothing was written") from None
            for op in e["ops"]:
                cur, x = _get(doc, op["path"]), op.get("expect", {})
                changed = "value" in x and (cur is _ABSENT or encode(cur, facts=True) != encode(x["value"], facts=True))
                if (cur is not _ABSENT) if x.get("exists") is False else changed:
                    raise Conflict(f"{path} {encode(op['path'])} changed")
                doc = _remove(doc, op["path"], op.get("prune")) if op.get("delete") else _set(doc, op["path"], self.resolve(op["value"]), e["ledger"])
            return (encode(doc, "  ") + "\n").encode()

        try:
            _io(self.caps.files.update, e["ledger"], patch)
        except Refused as r:
            raise HostError("IO", f"{path} is {r}") from None

    def effect_lock_release(self, e, cancel): self.locks.pop(e["name"], lambda: None)()

    def effect_event_emit(self, e, cancel): self.caps.emit({"type": e["type"], "payload": e["payload"]})

    def effect_http_send(self, e, cancel): self.need_http_request({**e, "key": "send"}, cancel)  # best effort: the outcome is ignored

    def end(self):
        """Releases the locks the operation still holds and closes its loopback listener."""
        for name in sorted(self.locks):
            self.locks.pop(name)()
            self.host.trace(f"release {name}")
        self.callback and self.callback.close()


_ABSENT = object()


def _get(doc, path):
    for k in path:
        doc = doc[k] if isinstance(doc, dict) and k in doc else _ABSENT
    return doc


def _set(doc, path, v, ledger):
    """Puts v at path inside doc, creating objects on the way (over a null too)."""
    if not path:
        return v
    if doc not in (None, _ABSENT) and not isinstance(doc, dict):
        raise HostError("IO", f"host: ledger.write {ledger}: cannot write inside a {_type(doc)}")
    doc = doc if isinstance(doc, dict) else {}
    doc[path[0]] = _set(doc.get(path[0], _ABSENT), path[1:], v, ledger)
    return doc


def _remove(doc, path, prune):
    """Deletes the value at path (absent is fine); prune removes its parent object too when the
    deletion leaves it empty."""
    parent = _get(doc, path[:-1])
    if isinstance(parent, dict):
        parent.pop(path[-1], None)
        if prune and not parent and len(path) > 1:
            del _get(doc, path[:-2])[path[-2]]
    return doc
