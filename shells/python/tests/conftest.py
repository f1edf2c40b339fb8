"""The Python shell's test world: real parts only. The OS keyring is the private Secret Service
of scripts/with-keyring.sh (GRANTWIRE_REAL_KEYRING=1), the files are a temporary home, and the
authorization server is the project's local one (internal/cmd/authserver, GRANTWIRE_AUTHSERVER:
rotation, reuse detection), with the packaged catalog's google entry pointed at it. Every
query, decision, need, fact and effect any test's client exchanges is validated against
hostabi/schema (jsonschema, JSON Schema 2020-12), and counted per kind.

Without what a test needs it skips, saying what is missing, unless GRANTWIRE_REQUIRE_PYTHON=1
(make test), where it fails."""

import collections
import json
import os
import pathlib
import signal
import subprocess
import urllib.request

import jsonschema
import pytest
import referencing

import grantwire
from grantwire import _os

REPO = pathlib.Path(os.environ.get("GRANTWIRE_REPO") or pathlib.Path(__file__).resolve().parents[3])
BASE = "https://github.com/grantwire/grantwire/hostabi/schema/"
GMAIL = "https://www.googleapis.com/auth/gmail.readonly"
SEEN = collections.Counter()  # what was validated, by "query", "decision", "fact:<kind>", "effect:<kind>"
CORPUS_SUMMARY = []  # the corpus run's closing lines (test_corpus.py): the pass count per family


def need(ok, why):
    """Skips (or, under GRANTWIRE_REQUIRE_PYTHON=1, fails) a test whose prerequisite is missing."""
    if not ok:
        (pytest.fail if os.environ.get("GRANTWIRE_REQUIRE_PYTHON") == "1" else pytest.skip)(why)


def _registry():
    resources = []
    for f in sorted((REPO / "hostabi" / "schema").glob("*.schema.json")):
        doc = json.loads(f.read_text())
        resources.append((doc["$id"], referencing.Resource.from_contents(doc)))
    return referencing.Registry().with_resources(resources)


REGISTRY = _registry()
_validators, _valid = {}, set()


def validate(schema_id, value):
    """Checks a value against hostabi/schema ("query.schema.json", "facts.schema.json#/$defs/<kind>");
    a value once found valid is not checked again (the corpus repeats many)."""
    key = (schema_id, json.dumps(value, sort_keys=True))
    if key in _valid:
        return
    if schema_id not in _validators:
        _validators[schema_id] = jsonschema.Draft202012Validator({"$ref": BASE + schema_id}, registry=REGISTRY)
    errors = sorted(_validators[schema_id].iter_errors(value), key=str)
    if errors:
        raise AssertionError(f"hostabi/schema: {schema_id}: {errors[0].message} in {json.dumps(value)[:400]}")
    _valid.add(key)


def watch(x, record=None, seen=SEEN):
    """Validates (and counts in seen) everything an Engine decides or a Host fetches and applies
    from now on: every query and decision (with its needs and effects, which the decision's
    schema covers) and every fact, read from the host's transcript; record(query_bytes,
    decision_bytes), when given, sees every decision too."""

    def on_decide(query, decision):
        q, d = json.loads(query), json.loads(decision)
        # The query's schema constrains each of its facts alone (properties, patternProperties and
        # additionalProperties only), so each fact is checked on its own: once per distinct value.
        validate("query.schema.json", {**q, "facts": {}})
        for k, v in q["facts"].items():
            validate("query.schema.json", {"op": q["op"], "args": {}, "facts": {k: v}})
        validate("decision.schema.json", d)
        seen.update(["query", "decision", *("need:" + n["kind"] for n in d.get("needs", []))])
        record and record(query, decision)

    def on_trace(line, then=getattr(x, "trace", None)):
        then(line)
        if line.startswith("==> apply "):
            seen["effect:" + json.loads(line[len("==> apply "):].split("\n<== error ")[0])["kind"]] += 1
        elif line.startswith("==> "):
            need, fact = (json.loads(part) for part in line[len("==> "):].split("\n<== "))
            validate(f"facts.schema.json#/$defs/{need['kind']}", fact)
            seen["fact:" + need["kind"]] += 1

    if hasattr(x, "on_decide"):
        x.on_decide = on_decide
    else:
        x.trace = on_trace
    return x


class World:
    """One test's home, keyring service and catalog, and the session's authorization server."""

    def __init__(self, tmp, server):
        self.tmp, self.server = tmp, server
        self.home = tmp / "home"
        self.catalog = tmp / "catalog.json"
        doc = json.loads((pathlib.Path(grantwire.__file__).parent / "catalog.json").read_text())
        g = doc["connectors"]["google"]
        for field, path in (("authorization_url", "/authorize"), ("token_url", "/token"), ("userinfo_url", "/userinfo"),
                            ("revocation_url", "/revoke"), ("device_authorization_url", "/devicecode")):
            g[field] = server.issuer + path
        g["issuer"] = server.issuer
        self.catalog.write_text(json.dumps(doc))
        self.env = {"GRANTWIRE_HOME": str(self.home), "GRANTWIRE_CATALOG": str(self.catalog),
                    "GRANTWIRE_LOCK_DIR": str(tmp / "locks"), "BROWSER": ""}

    def client(self, **kw):
        kw.setdefault("browser", False)
        kw.setdefault("interactive", False)
        c = grantwire.Client(str(self.home), catalog=str(self.catalog), lock_dir=str(self.tmp / "locks"), **kw)
        watch(c.engine), watch(c.host)
        return c

    def connect(self, client, scopes=("openid", GMAIL), grant_agents=()):
        """Configures google's client and connects it, the user consenting in a "browser" that
        follows the authorization URL (the server consents at once, then redirects to the
        loopback)."""
        client.do("configure_client", {"connector": "google"}, {"client_id": self.server.client_id, "client_secret": self.server.secret})
        return client.connect("google", scopes, grant_agents, timeout_s=30, show=follow)


def follow(url):
    """A browser: GETs the URL and follows its redirects to the loopback."""
    with urllib.request.urlopen(url, timeout=10) as r:
        r.read()
    return True


class Server:
    def __init__(self, binary, tmp):
        self.client_id, self.secret = "py-client", "py-client-secret"
        self.proc = subprocess.Popen([binary, "-client-id", self.client_id, "-client-secret", self.secret, "-expires-in", "3600",
                                      "-device-interval", "1"],
                                     stdout=subprocess.PIPE, stderr=open(tmp / "authserver.log", "w"), text=True)
        self.endpoints = json.loads(self.proc.stdout.readline())
        self.issuer = self.endpoints["issuer"]

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    binary = os.environ.get("GRANTWIRE_AUTHSERVER", "")
    need(binary and os.path.exists(binary), "GRANTWIRE_AUTHSERVER names no local authorization server binary "
         "(go build -o build/python/bin/ ./internal/cmd/authserver; the Go test does it)")
    s = Server(binary, tmp_path_factory.mktemp("authserver"))
    yield s
    s.close()


@pytest.fixture
def world(tmp_path, server, monkeypatch):
    if os.environ.get("GRANTWIRE_REAL_KEYRING") == "0":  # skipped on purpose (GRANTWIRE_REAL_KEYRING=0 make test)
        pytest.skip("GRANTWIRE_REAL_KEYRING=0: the real-keyring tests are skipped on purpose")
    need(os.environ.get("GRANTWIRE_REAL_KEYRING") == "1", "no private Secret Service: run under scripts/with-keyring.sh "
         "(GRANTWIRE_REAL_KEYRING=1), as make test does")
    w = World(tmp_path, server)
    for k, v in w.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(grantwire, "_default_client", w.client())  # the module-level API's client, on this world
    return w


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("GRANTWIRE_PY_SEEN")
    if out:
        pathlib.Path(out).write_text(json.dumps(dict(SEEN), sort_keys=True))


def pytest_terminal_summary(terminalreporter):
    for line in CORPUS_SUMMARY:
        terminalreporter.write_line(line)
