# The OS capabilities of the Python shell, the counterpart of shells/native in Go: the OS
# credential store through `keyring` (GAIA's library) with the Go shell's slots, chunking and
# refusals; ledger files replaced atomically under gofrs/flock-compatible locks (`filelock`,
# flock(2)); the provider locks the Go shell takes; HTTP through urllib (redirects never
# followed); the PKCE loopback on the standard library's HTTP server; clock, entropy, events.
# Every one is a primitive: the policy decides what they mean.

import concurrent.futures
import contextlib
import contextvars
import hashlib
import hmac
import http.server
import os
import queue
import re
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

import filelock
import keyring
import keyring.backends.chainer
import keyring.errors
from keyring.backends import SecretService

try:  # keyring's Secret Service library (Linux and the BSDs only)
    import secretstorage
    import secretstorage.util
    _SS_MISSING, _SS_LOCKED = (secretstorage.exceptions.ItemNotFoundException,), (secretstorage.exceptions.LockedException,)
except ImportError:
    secretstorage, _SS_MISSING, _SS_LOCKED = None, (), ()

from ._host import Canceled, HostError, NoResponse, Refused

DEFAULT_SERVICE = "grantwire.connections"
MAX_LEDGER = 16 << 20
CHUNK_SENTINEL, CHUNK_CHARS, CHUNK_BYTES = "\x00gaia-chunked\x00", 1024, 2048  # GAIA's scheme, as shells/native
SECURE = {"keyring.backends.SecretService.Keyring", "keyring.backends.macOS.Keyring", "keyring.backends.Windows.WinVaultKeyring"}
# A private Secret Service for the shell it is run in, from a grantwire checkout (the Go
# shell's SessionFix): the fix on Linux where none answers; the message says what to install
# for a desktop instead.
SESSION_FIX = 'eval "$(scripts/keyring-session.sh start)"'
INSTALL_FIX = SESSION_FIX if sys.platform.startswith("linux") else (
    "install and start a Secret Service such as gnome-keyring (Debian/Ubuntu: apt-get install gnome-keyring; "
    "Fedora: dnf install gnome-keyring), KeePassXC or KWallet, inside a desktop or dbus-run-session session")


def _insecure(message, fix):
    """INSECURE_STORE as the Go shell words it (shells/native insecureStore, installAdvice)."""
    if fix == SESSION_FIX:
        message += ("; install a Secret Service such as gnome-keyring (Debian/Ubuntu: apt-get install gnome-keyring; "
                    "Fedora: dnf install gnome-keyring), KeePassXC or KWallet in a desktop session, or, without one, start a private "
                    "Secret Service for this shell from a grantwire checkout (the fix; scripts/keyring-session.sh stop ends it)")
    return HostError("INSECURE_STORE", message, fix)


def _session_files():
    """Where scripts/keyring-session.sh writes its bus address (shells/native/sessionbus.go)."""
    out = []
    c = os.environ.get("XDG_CACHE_HOME", "")
    if c and os.path.isabs(c):
        out.append(os.path.join(c, "grantwire", "keyring-session"))
    h = os.environ.get("HOME", "")
    if h and os.path.isabs(h):
        p = os.path.join(h, ".cache", "grantwire", "keyring-session")
        if not out or out[0] != p:
            out.append(p)
    return out


def _owned_private(p, st):
    if st.st_uid != os.getuid():
        raise ValueError(f"{p} belongs to another user (uid {st.st_uid})")
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise ValueError(f"{p} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})")


def _read_session_file(p):
    st = os.lstat(p)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{p} is not a regular file")
    _owned_private(p, st)
    _owned_private(os.path.dirname(p), os.stat(os.path.dirname(p)))
    with open(p, "rb") as f:
        b = f.read(4097)
    if len(b) > 4096:
        raise ValueError(f"{p} is over 4 KiB")
    addr = b.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    kind, sep, rest = addr.partition(":")
    if not sep or kind != "unix":
        raise ValueError(f"{p} names no unix socket address")
    for kv in rest.split(","):
        if kv.startswith("path="):
            path = kv[len("path="):]
            try:
                ok = stat.S_ISSOCK(os.stat(path).st_mode)
            except OSError:
                ok = False
            if not ok:
                raise ValueError(f"{p} names a bus that is gone ({path}): the session stopped without `keyring-session.sh stop`; start one again")
            return addr
        if kv.startswith("abstract="):
            return addr
    raise ValueError(f"{p} names no unix socket address")


def _session_bus():
    """The address in the first keyring session file that passes the checks, and why the others did not."""
    why = []
    for p in _session_files():
        try:
            return _read_session_file(p), []
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as e:
            why.append(str(e))
    return "", why
# A locked keyring: the Go shell's UnlockFix (shells/native/unlock.go), which unlocks the
# running daemon with the password on stdin (gnome-keyring-daemon --unlock starts a second one).
UNLOCK_FIX = "unlock the login Keychain (security unlock-keychain)" if sys.platform == "darwin" else "grantwire keyring unlock"
LOCK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
# The operation's own way to show an authorization URL or a device code (the Python API's
# start_authorization hands them to its caller): hostabi.WithBrowser / WithPrompter in Go.
browser_override = contextvars.ContextVar("grantwire_browser", default=None)
prompt_override = contextvars.ContextVar("grantwire_prompt", default=None)


def service_for(home, user_home):
    """native.ServiceFor: the default home uses DEFAULT_SERVICE, any other a service of its own."""
    home = os.path.abspath(home)
    if user_home and os.path.abspath(os.path.join(user_home, ".grantwire")) == home:
        return DEFAULT_SERVICE
    return DEFAULT_SERVICE + "." + hashlib.sha256(home.encode()).hexdigest()[:12]


def user_cache_dir():
    """os.UserCacheDir in Go ("" when there is none)."""
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches")
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA", "")
    d = os.environ.get("XDG_CACHE_HOME") or (os.environ.get("HOME", "") and os.path.join(os.environ["HOME"], ".cache"))
    return d if os.path.isabs(d) else ""


def service_lock_dir(root, service):
    """native's serviceLockDir: the service's name made safe for a file name, and a hash."""
    name = "".join((c if c.isascii() and (c.isalnum() or c in "_-" or (c == "." and i > 0)) else "_")
                   for i, c in _byte_offsets(service) if i < 48)
    return os.path.join(root, name + "-" + hashlib.sha256(service.encode()).hexdigest()[:16])


def _byte_offsets(s):
    i = 0
    for c in s:
        yield i, c
        i += len(c.encode())


def _ensure_dir(*dirs):
    for d in dirs:
        os.makedirs(d, 0o700, exist_ok=True)
        os.chmod(d, 0o700)


def _stamp(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent"
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mode}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _version(doc):
    return "sha256:" + hashlib.sha256(doc).hexdigest()[:32]


def _bump(path):
    """Replaces a generation file by a new one (new inode, mtime the clock's nanoseconds)."""
    os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".keyring-generation.tmp-", dir=os.path.dirname(path))
    now = time.time_ns()
    with os.fdopen(fd, "w") as f:
        f.write(f"{now} {os.getpid()}\n")
    os.utime(tmp, ns=(now, now))
    os.replace(tmp, path)


class Keyring:
    """The OS credential store through `keyring`, only one of its OS backends (never a file or
    plaintext fallback), every call bounded by timeout_s, GAIA's chunking, and grantwire's
    generation files bumped around every write of grantwire's own services."""

    def __init__(self, home, lock_dir, timeout_s=10.0):
        self.timeout_s, self._pool, self._backend, self._local = timeout_s, concurrent.futures.ThreadPoolExecutor(4), None, threading.local()
        self.gen_paths = lambda service: ([os.path.join(service_lock_dir(lock_dir, service), ".keyring-generation")] if lock_dir else []) + [
            os.path.join(home, ".keyring-generation")]

    def generation(self, service):
        own = service == "grantwire" or service.startswith("grantwire.")
        return "".join(_stamp(p) for p in self.gen_paths(service)) if own else None

    def backend(self):
        if self._backend is None:
            if sys.platform.startswith("linux") and os.environ.get("DBUS_SESSION_BUS_ADDRESS", "autolaunch:") == "autolaunch:":
                # A session of scripts/keyring-session.sh, as the Go shell reads it (sessionbus.go).
                addr, why = _session_bus()
                if addr:
                    os.environ["DBUS_SESSION_BUS_ADDRESS"] = addr
                elif not any(os.path.exists(f"/run/user/{os.getuid()}/{n}") for n in ("bus", "dbus-session")):
                    msg = ("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset, no keyring session file is usable and no /run/user "
                           "bus exists), so no Secret Service is reachable")
                    raise _insecure(msg + "".join("; " + w for w in why), INSTALL_FIX)
            chosen = keyring.get_keyring()
            kinds = chosen.backends if isinstance(chosen, keyring.backends.chainer.ChainerBackend) else [chosen]
            secure = [b for b in kinds if f"{type(b).__module__}.{type(b).__name__}" in SECURE]
            if not secure:
                raise _insecure("no Secret Service provider is running on the session bus" if sys.platform.startswith("linux")
                                else f"the keyring backend {type(chosen).__name__} is not the OS credential store", INSTALL_FIX)
            self._backend = secure[0]
        return self._backend

    def _call(self, what, fn, *args):
        b = self.backend()
        if isinstance(b, SecretService.Keyring):
            fn = getattr(self, "_ss_" + fn)  # the Secret Service on this worker's connection and session
        try:
            return self._pool.submit(getattr(b, fn) if isinstance(fn, str) else fn, *args).result(self.timeout_s)
        except concurrent.futures.TimeoutError:
            raise HostError("INSECURE_STORE", f"the OS credential store did not answer a {what} within {self.timeout_s:g}s",
                            "unlock the keyring (a locked keyring may be waiting for a password prompt), then retry") from None
        except (keyring.errors.PasswordDeleteError, *_SS_MISSING):
            return None
        except (keyring.errors.KeyringLocked, *_SS_LOCKED) as e:
            raise HostError("INSECURE_STORE", f"the default keyring collection is locked or missing ({e})", UNLOCK_FIX) from None
        except Exception as e:  # noqa: BLE001 - a backend failure is the store's
            self._local.__dict__.pop("ss", None)  # a broken connection is opened again by the next call
            raise _insecure(f"the OS credential store failed a {what} ({str(e)[:200]})", INSTALL_FIX) from None

    # keyring's Secret Service backend opens a D-Bus connection and an encrypted session per
    # call (tens of milliseconds); through its library, secretstorage, each worker thread keeps
    # one. Items are written with go-keyring's attributes and label: keyring adds
    # "application", so its replace would leave a second item beside the Go shell's.
    def _collection(self):
        if "ss" not in self._local.__dict__:
            conn = secretstorage.dbus_init()
            path = getattr(self.backend(), "preferred_collection", secretstorage.collection.DEFAULT_COLLECTION)
            col = secretstorage.Collection(conn, path, secretstorage.util.open_session(conn))
            if col.is_locked() and (col.unlock() or col.is_locked()):
                raise keyring.errors.KeyringLocked("Failed to unlock the collection!")
            self._local.ss = col
        return self._local.ss

    def _ss_item(self, service, user):
        return next(iter(self._collection().search_items({"username": user, "service": service})), None)

    def _ss_get_password(self, service, user):
        item = self._ss_item(service, user)
        return None if item is None else item.get_secret().decode()

    def _ss_set_password(self, service, user, value):
        self._collection().create_item(f"Password for '{user}' on '{service}'", {"username": user, "service": service}, value, replace=True)

    def _ss_delete_password(self, service, user):
        item = self._ss_item(service, user)
        item is None or item.delete()

    def _read(self, service, user):
        return self._call("read", "get_password", service, user)

    def get(self, service, user):
        raw = self._read(service, user)
        if raw is None or not raw.startswith(CHUNK_SENTINEL):
            return raw
        m = re.fullmatch(r"([0-9]+)(?::([0-9a-f]{8}))?", raw[len(CHUNK_SENTINEL):])
        if not m or not 1 <= int(m[1]) <= 4096:
            return None  # a malformed manifest reads as absent
        parts = [self._read(service, f"{user}#{i}") for i in range(int(m[1]))]
        if None in parts or (m[2] and "%08x" % zlib.crc32("".join(parts).encode()) != m[2]):
            return None  # a torn write reads as absent, never as a truncated value
        return "".join(parts)

    @contextlib.contextmanager
    def _changing(self, service):
        """A write of the service, between two bumps of grantwire's generation files."""
        self.backend()
        paths = self.gen_paths(service) if self.generation(service) is not None else []
        for p in paths:
            _bump(p)
        try:
            yield
        finally:
            for p in paths:
                _bump(p)

    def set(self, service, user, value):
        parts = _split(value)
        n = len(parts) if len(parts) > 1 or value.startswith(CHUNK_SENTINEL) else 0  # chunked: parts, then their manifest
        with self._changing(service):
            for i, p in enumerate(parts if n else []):
                self._call("write", "set_password", service, f"{user}#{i}", p)
            self._call("write", "set_password", service, user, f"{CHUNK_SENTINEL}{n}:{zlib.crc32(value.encode()):08x}" if n else value)
            self._sweep(service, user, n)

    def delete(self, service, user):
        with self._changing(service):
            if self._read(service, user) is not None:
                self._call("delete", "delete_password", service, user)
            self._sweep(service, user, 0)

    def _sweep(self, service, user, start):
        """Deletes the parts of an earlier chunked value from part start on."""
        while self._read(service, f"{user}#{start}") is not None:
            self._call("delete", "delete_password", service, f"{user}#{start}")
            start += 1


def _split(v):
    """Parts of at most CHUNK_CHARS characters and CHUNK_BYTES bytes, on character boundaries."""
    if len(v) <= CHUNK_CHARS and len(v.encode()) <= CHUNK_BYTES:
        return [v]
    parts, cur, size = [], [], 0
    for c in v:
        n = len(c.encode())
        if len(cur) == CHUNK_CHARS or size + n > CHUNK_BYTES:
            parts.append("".join(cur))
            cur, size = [], 0
        cur.append(c)
        size += n
    return parts + ["".join(cur)] if cur else parts


def _wait_lock(path, wait_s, cancel):
    """An exclusive flock(2) on path (what gofrs/flock takes), polled until wait_s passed."""
    lk, deadline = filelock.UnixFileLock(path, mode=0o600), time.monotonic() + wait_s
    while True:
        try:
            lk.acquire(timeout=max(0.0, min(0.05, deadline - time.monotonic())), poll_interval=0.002)
            return lk
        except filelock.Timeout:
            if cancel is not None and cancel.is_set():
                raise Canceled("canceled while waiting for a lock") from None
            if time.monotonic() >= deadline:
                return None


class Locks:
    """A provider's lock: the keyring service's (shared by every home of the service), then the
    home's connectors/<provider>.lock, as shells/native takes them."""

    def __init__(self, home, service_dir):
        self.home, self.service_dir = home, service_dir

    def paths(self, name):
        return ([os.path.join(self.service_dir, name + ".lock")] if self.service_dir else []) + [os.path.join(self.home, "connectors", name + ".lock")]

    def try_lock(self, name, wait_s, cancel):
        if not LOCK_NAME.fullmatch(name):
            raise HostError("IO", f"invalid lock name {name!r}")
        held, deadline = [], time.monotonic() + wait_s

        def release():  # what is held, in reverse order (None: busy)
            for h in reversed(held):
                h.release()
        for p in self.paths(name):
            _ensure_dir(*([self.home] if p.startswith(self.home) else []), os.path.dirname(p))
            lk = _wait_lock(p, max(0.0, deadline - time.monotonic()), cancel)
            if lk is None:
                return release()
            held.append(lk)
        return release


class Files:
    """JSON files under the home, versioned by content hash, replaced atomically under a lock
    file; and the digest of any regular file."""

    def __init__(self, home, warn):
        self.home, self.warn, self._mu = home, warn, {}

    def path(self, name):
        return os.path.join(self.home, *name.split("/"))

    def _load(self, p):
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno != 40:  # ELOOP: a symbolic link
                raise HostError("IO", f"could not read {p} ({e.strerror.lower()}); nothing was changed", f"ls -l {p}") from None
            raise Refused("a symbolic link" if os.path.isfile(p) else "a symbolic link to no regular file") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise Refused("not a regular file")
            if st.st_size > MAX_LEDGER:
                raise Refused("larger than 16 MiB")
            doc = f.read(MAX_LEDGER + 1)
        if len(doc) > MAX_LEDGER:
            raise Refused("larger than 16 MiB")
        if st.st_mode & 0o077 and sys.platform != "win32":
            os.chmod(p, 0o600)
            self.warn(f"{p} was mode {oct(st.st_mode & 0o777)}, so other users could read or change it; grantwire set it to 0600 "
                      "(check that nobody changed your grants: grantwire status)")
        return doc

    def read(self, name):
        doc = self._load(self.path(name))
        return (None, "") if doc is None else (doc, _version(doc))

    def update(self, name, fn):
        p = self.path(name)
        d, base = os.path.dirname(p), os.path.basename(p)
        _ensure_dir(self.home, d)
        try:
            with self._mu.setdefault(name, threading.Lock()), filelock.UnixFileLock(os.path.join(d, f".{base}.lock"), mode=0o600, timeout=10):
                cur = self._load(p)
                doc = fn(cur, "" if cur is None else _version(cur))
                for stale in os.listdir(d):
                    if stale.startswith(f".{base}.tmp-"):
                        os.remove(os.path.join(d, stale))
                fd, tmp = tempfile.mkstemp(prefix=f".{base}.tmp-", dir=d)  # mode 0600
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(doc)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, p)
                except BaseException:
                    os.path.exists(tmp) and os.remove(tmp)
                    raise
                os.chmod(p, 0o600)
                dfd = os.open(d, os.O_RDONLY)
                try:
                    os.fsync(dfd)  # the rename too is on disk
                finally:
                    os.close(dfd)
        except filelock.Timeout:
            raise HostError("IO", f"the lock of {p} was held by another process for more than 10s") from None

    def digest(self, path, max_bytes):
        if path.startswith("~/"):
            path = os.path.join(os.path.expanduser("~"), path[2:])
        try:
            with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise HostError("IO", f"{path} is not a regular file")
                data = f.read(max_bytes + 1)
        except OSError as e:
            raise HostError("IO", f"open {path}: {e.strerror[0].lower()}{e.strerror[1:]}") from None
        if len(data) > max_bytes:
            raise HostError("IO", f"{path} is larger than {max_bytes} bytes")
        return hashlib.sha256(data).hexdigest()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None  # never followed: the 3xx is the answer


_opener = urllib.request.build_opener(_NoRedirect)


def fetch(method, url, headers, body, timeout_s, max_bytes, cancel):
    """One HTTP exchange (redirects never followed): (status, headers, at most max_bytes + 1 bytes)."""
    if cancel is not None and cancel.is_set():
        raise NoResponse("canceled")
    req = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        try:
            res = _opener.open(req, timeout=timeout_s)
        except urllib.error.HTTPError as e:
            res = e
        with res:
            return res.status, {k.lower(): v for k, v in res.headers.items()}, res.read(max_bytes + 1)
    except (socket.timeout, TimeoutError):
        raise NoResponse("timeout") from None
    except (urllib.error.URLError, OSError) as e:
        why = getattr(e, "reason", e)
        kind = "refused" if isinstance(why, ConnectionRefusedError) else "tls" if isinstance(why, ssl.SSLError) else \
            "timeout" if isinstance(why, (socket.timeout, TimeoutError)) else "failed"
        raise NoResponse(kind) from None


_PAGE = "<!doctype html><meta charset=utf-8><title>grantwire</title><p>%s</p>\n"
_PAGES = {200: "Authorization complete. You can close this tab and return to grantwire.", 400: "This request was refused.",
          404: "Not found.", 405: "Method not allowed.", 410: "This authorization has already been completed.",
          0: "Authorization was not completed. You can close this tab; grantwire shows what happened."}


class _Callback(http.server.BaseHTTPRequestHandler):
    """The one-shot loopback of an authorization (RFC 8252 §7.3), with the Go shell's checks:
    origin-form /callback, GET, the Host header, one state compared in constant time, once."""

    def log_message(self, *args):
        pass

    def _page(self, status, text):
        self.send_response(status)
        for k, v in (("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                     ("Content-Security-Policy", "default-src 'none'"), ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")):
            self.send_header(k, v)
        if status == 405:
            self.send_header("Allow", "GET")
        self.end_headers()
        self.wfile.write((_PAGE % text).encode())

    def do_GET(self):
        w, u = self.server.waiter, urllib.parse.urlsplit(self.path)
        if not self.path.startswith("/"):
            return self._page(400, _PAGES[400]), w.refused("wrong Host header (absolute-form request)")
        if u.path != "/callback":
            return self._page(404, _PAGES[404])
        if self.headers.get("Host") != w.host:
            return self._page(400, _PAGES[400]), w.refused("wrong Host header")
        if w.accepted:
            return self._page(410, _PAGES[410])
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        states = q.get("state", [])
        if w.state is None or len(states) != 1 or not hmac.compare_digest(states[0].encode(), w.state.encode()):
            return self._page(400, _PAGES[400]), w.refused("state mismatch" if states and states[0] else "no state parameter")
        with w.mu:
            if w.accepted:
                return self._page(410, _PAGES[410])
            w.accepted = True
        res = {k: v[0] for k, v in q.items()}
        if len(q.get("code", [])) > 1:
            res.pop("code")
            res["error"] = "invalid_request"
        self._page(200, _PAGES[200] if res.get("code") and not res.get("error") else _PAGES[0])
        w.results.put(res)

    def do_POST(self):
        self._page(405, _PAGES[405]) if urllib.parse.urlsplit(self.path).path == "/callback" else self._page(404, _PAGES[404])

    do_PUT = do_DELETE = do_HEAD = do_POST


class _Waiter:
    def __init__(self, loopback):
        self.loopback, self.state, self.accepted, self.mu, self.results = loopback, None, False, threading.Lock(), queue.Queue()
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Callback)
        self.srv.waiter, self.srv.daemon_threads = self, True
        self.host = f"127.0.0.1:{self.srv.server_address[1]}"
        self.redirect_uri = f"http://{self.host}/callback"
        threading.Thread(target=self.srv.serve_forever, args=(0.05,), daemon=True).start()

    def refused(self, why):
        self.loopback.say(f"A callback was refused ({why}); still waiting for the authorization.")

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()

    def wait(self, url, state, connector, timeout_s, cancel, alternative):
        self.state, say = state, self.loopback.say
        show = browser_override.get() or self.loopback.browser
        if show is not None and show(url):
            say(f"The browser shows the {connector} authorization (waiting up to {timeout_s:g}s). If it did not open, open:\n\n  {url}\n")
        elif not self.loopback.interactive:
            return False
        else:
            say(f"To authorize {connector}, open this URL in a browser on this machine (waiting up to {timeout_s:g}s):\n\n  {url}\n")
            if alternative:
                say(f"No browser on this machine? Press Ctrl-C and run: {alternative}\n")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if cancel is not None and cancel.is_set():
                raise Canceled("canceled while waiting for the authorization")
            try:
                return self.results.get(timeout=min(0.1, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                pass
        say(f"No authorization arrived within {timeout_s:g}s.")
        return None


class Loopback:
    """The loopback capability: a one-shot listener per authorization, the browser (a function
    of the URL answering whether it showed it) and what the user reads while it waits."""

    def __init__(self, browser, interactive, say):
        self.browser, self.interactive, self.say = browser, interactive, say

    def open(self, connector, mode):
        if mode == "paste":
            return {"unavailable": "there is no input to paste the redirect address into"}
        if self.browser is None and browser_override.get() is None and not self.interactive:
            return {"unavailable": "no browser can be opened and nobody is at a terminal to open the URL"}
        return _Waiter(self)


def default_browser(getenv=os.environ.get):
    """The user's browser as the Go CLI finds it ($BROWSER, with %s for the URL; else open,
    rundll32 or xdg-open with a display), a function of the URL; None when there is none."""
    fields = (getenv("BROWSER") or "").strip().split(":")[0].split()
    if not fields:
        fields = ["open"] if sys.platform == "darwin" else ["rundll32", "url.dll,FileProtocolHandler"] if sys.platform == "win32" else \
            ["xdg-open"] if (getenv("DISPLAY") or getenv("WAYLAND_DISPLAY")) and shutil.which("xdg-open") else []
    if not fields:
        return None

    def show(url):
        args = [a.replace("%s", url) for a in fields[1:]]
        try:
            subprocess.Popen(fields[:1] + args + ([] if any("%s" in a for a in fields[1:]) else [url]), stdin=subprocess.DEVNULL)
            return True
        except OSError:
            return False
    return show


class Shell:
    """The OS shell's capabilities on one home and keyring service (the Go shell's defaults:
    $GRANTWIRE_HOME or ~/.grantwire, $GRANTWIRE_KEYRING_SERVICE or native.ServiceFor(home),
    $GRANTWIRE_LOCK_DIR or the user cache directory's grantwire/locks)."""

    def __init__(self, home=None, service=None, lock_dir=None, browser=None, interactive=None, out=None):
        user_home = os.path.expanduser("~")
        self.home = os.path.abspath(home or os.environ.get("GRANTWIRE_HOME") or os.path.join(user_home, ".grantwire"))
        self.service = service or os.environ.get("GRANTWIRE_KEYRING_SERVICE") or service_for(self.home, user_home)
        cache = user_cache_dir()
        lock_dir = lock_dir or os.environ.get("GRANTWIRE_LOCK_DIR") or (cache and os.path.join(cache, "grantwire", "locks"))
        self.lock_dir = os.path.abspath(lock_dir) if lock_dir else ""
        self.out = out or sys.stderr
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.keyring = Keyring(self.home, self.lock_dir)
        self.files = Files(self.home, lambda m: self.say(f"grantwire: warning: {m}"))
        self.locks = Locks(self.home, service_lock_dir(self.lock_dir, self.service) if self.lock_dir else "")
        self.loopback = Loopback(default_browser() if browser is None else browser or None, self.interactive, self.say)
        self.subscribers, self.fetch, self.getenv, self.entropy = [], fetch, os.environ.get, os.urandom

    def say(self, text):
        print(text, file=self.out, flush=True)

    def clock(self):
        return time.time_ns() // 1_000_000

    def sleep(self, ms, cancel):
        if cancel is not None and cancel.wait(ms / 1000):
            raise Canceled("canceled while waiting")
        if cancel is None:
            time.sleep(ms / 1000)

    def emit(self, event):
        for fn in list(self.subscribers):
            fn(event)

    def prompt(self, n):
        show = prompt_override.get()
        if show is not None:
            return show(n) or True
        if not self.interactive:
            return "nobody is at a terminal to read the code"
        self.say(f"To authorize {n['connector']}, open {n['verification_uri']} on any device and enter the code:\n\n  {n['user_code']}\n")
        if n.get("verification_uri_complete"):
            self.say(f"(or open {n['verification_uri_complete']}, which carries the code)")
        self.say(f"The code can be used for {round(n['expires_in_ms'] / 1000)}s.")
        return True
