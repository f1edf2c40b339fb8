"""The in-memory test world of the Python corpus runner, the twin of
internal/testworld/memhost (with the entropy of internal/testworld/memshell) and of
shells/wasm/node/memworld.mjs: a simulated clock whose waits advance it, a keyring with
failure injection, files under a simulated home with version counters, locks other
processes hold, an event log, the environment; and the test worlds' one authorization
server (internal/testworld/authserver), a world of its control API reached over real HTTP:
the host's HTTP goes there (through the OS shell's own fetch, grantwire._os.fetch), and the
simulated user at the loopback and at the device prompt does what the server says. Every
process of a scenario shares one world; each has a Host of its own.

It mirrors memhost closely enough that the Python shell asks the core exactly the questions
the Go host asks (python_test.go compares them): the same file versions ("v<n>"), the same
entropy, the same texts of injected failures, the same server answering."""

import hashlib
import http.client
import json
import types
import urllib.parse

from grantwire import _os
from grantwire._host import HostError

HOME = "/home/user/.grantwire"
REDIRECT = "http://127.0.0.1:49152/callback"
NO_WAY = "hostabi: no way to complete a browser authorization here"


class World:
    """One scenario's world; capabilities(service) are what a process's Host is given."""

    def __init__(self, hub, start_ms):
        self.keyring, self.files, self.versions, self.sources, self.holders = {}, {}, {}, {}, {}
        self.now_ms, self.events, self.env, self.failures = start_ms, [], {}, []
        self.entropy, self.drawn = b"", 0
        self.server = Server(hub, self)

    def capabilities(self, service):
        w = self

        class Keyring:
            def get(self, svc, user):
                w.fail("get", user)
                return w.keyring.get((svc, user))

            def set(self, svc, user, value):
                w.fail("set", user)
                w.keyring[(svc, user)] = value

            def delete(self, svc, user):
                w.fail("delete", user)
                w.keyring.pop((svc, user), None)

            def generation(self, svc):
                return None  # only the world's processes write it, and each knows what it wrote

        class Files:
            def read(self, name):
                return w.files.get(name), w.version(name)

            def update(self, name, fn):
                w.files[name] = bytes(fn(w.files.get(name), w.version(name)))
                w.versions[name] = w.versions.get(name, 0) + 1

            def path(self, name):
                return f"{HOME}/{name}"

            def digest(self, path, max_bytes):
                if path not in w.sources:
                    raise OSError(f"{path}: no such file")
                if len(w.sources[path]) > max_bytes:
                    raise OSError(f"{path} is larger than {max_bytes} bytes")
                return hashlib.sha256(w.sources[path]).hexdigest()

        return types.SimpleNamespace(
            service=service, keyring=Keyring(), files=Files(), locks=types.SimpleNamespace(try_lock=w.try_lock),
            loopback=types.SimpleNamespace(open=w.server.open), clock=lambda: w.now_ms, sleep=w.sleep, entropy=w.random,
            getenv=w.env.get, emit=w.events.append, fetch=w.server.fetch, prompt=w.server.prompt)

    def version(self, name):
        return f"v{self.versions[name]}" if name in self.files else ""

    def try_lock(self, name, wait_s, cancel):
        """A lock held from outside is busy at once: steps run one at a time, so the only
        holders are other processes, which the simulated world never waits for."""
        if name in self.holders:
            return None
        self.holders[name], released = "self", []

        def release():
            if not released:
                self.holders.pop(name, None)
            released.append(True)
        return release

    def sleep(self, ms, cancel):  # the simulated clock advances at once (hostabi.Sleeper in memhost)
        self.now_ms += ms

    def random(self, n):
        """The stream of memshell.Entropy: SHA-256("grantwire test entropy <n>") for n = 0, 1, 2, ... end to end."""
        while len(self.entropy) < n:
            self.entropy += hashlib.sha256(f"grantwire test entropy {self.drawn}".encode()).digest()
            self.drawn += 1
        out, self.entropy = self.entropy[:n], self.entropy[n:]
        return out

    def fail(self, op, user):
        """Raises the first injected failure matching (op, user), count times."""
        for f in self.failures:
            if f["count"] > 0 and f["op"] == op and f["user"] == user:
                f["count"] -= 1
                if f.get("insecure"):
                    raise HostError("INSECURE_STORE", "memhost: injected", "install and unlock a Secret Service provider (gnome-keyring or KeePassXC)")
                raise OSError("memhost: injected failure")

    def users(self, service):
        return [u for s, u in self.keyring if s == service]


class Server:
    """The world's authorization server: a world of the control API at hub (authserver.Worlds),
    created per scenario, scripted with its token_server, told the simulated time before each
    request, and asked whether a user is there. on_during(id) performs the world action an
    answer carries in its Grantwire-During header before the answer is handed on."""

    def __init__(self, hub, world):
        self.w, self.on_during = world, None
        u = urllib.parse.urlsplit(hub)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.url = self.call("POST", "/worlds", {"now_ms": world.now_ms}, 201)["url"]
        self.path, self.clock_ms = urllib.parse.urlsplit(self.url).path, world.now_ms

    def call(self, method, path, body=None, want=None):
        self.conn.request(method, path, None if body is None else json.dumps(body))
        res = self.conn.getresponse()
        text = res.read().decode()
        if res.status >= 300 or (want and res.status != want):
            raise RuntimeError(f"authserver: {method} {path}: {res.status} {text}")
        return json.loads(text) if text else None

    def control(self, method, what, body=None):
        return self.call(method, f"{self.path}/control/{what}", body)

    def script(self, piece):
        self.control("POST", "script", piece)

    def counters(self):
        return self.control("GET", "counters")

    def close(self):
        self.call("DELETE", self.path)
        self.conn.close()

    def fetch(self, method, url, headers, body, timeout_s, max_bytes, cancel):
        """The world's HTTP: a catalog URL is asked at the server's /url/<scheme>/<host>/<path>,
        after the server was told the time."""
        if self.clock_ms != self.w.now_ms:
            self.control("PUT", "clock", {"now_ms": self.w.now_ms})
            self.clock_ms = self.w.now_ms
        status, got, raw = _os.fetch(method, f"{self.url}/url/{url.replace('://', '/', 1)}", headers, body, timeout_s, max_bytes, cancel)
        if "grantwire-during" in got:
            self.on_during(got["grantwire-during"])
        return status, got, raw

    def open(self, connector, mode):
        """The loopback: the user's browser, which the server says is missing or never comes back,
        or else follows the authorization up to its redirect to the loopback (paste mode: the
        same user pastes that redirect)."""
        outcome = self.control("POST", "browser", {"provider": connector})["outcome"]
        if outcome == "interactive_required":
            return {"unavailable": "memhost: no browser: " + NO_WAY}
        server = self

        class Callback:
            redirect_uri = REDIRECT

            def close(self):
                pass

            def wait(self, url, state, connector, timeout_s, cancel, alternative):
                if outcome == "timeout":
                    return None
                status, got, _ = server.fetch("GET", url, {}, None, timeout_s, 1 << 20, cancel)
                back = got.get("location", "")
                if status != 302 or not back.startswith(REDIRECT + "?"):
                    return None  # the user never came back
                params = {k: v[0] for k, v in urllib.parse.parse_qs(back[len(REDIRECT) + 1:], keep_blank_values=True).items()}
                if params.get("state") != state:
                    raise OSError("memhost: the callback's state does not match")
                return params

        return Callback()

    def prompt(self, n):
        """The user reading a device code: nobody, when the server says so."""
        if self.control("POST", "prompt", {"provider": n["connector"]})["unattended"]:
            return "memhost: nobody to show the code to: " + NO_WAY
        return True
