"""Operations on real parts: the private Secret Service, a temporary home, the local
authorization server. Every exchange is validated against hostabi/schema (conftest.watch);
the last test demands that every need and effect kind these operations use was seen."""

import json
import os
import pathlib
import stat
import subprocess
import threading
import urllib.parse
import urllib.request

import keyring.errors
import pytest
from conftest import GMAIL, SEEN, follow, need

import grantwire
from grantwire import _os
from grantwire._host import HostError


def test_connect_grant_token_refresh_disconnect(world):
    c = world.client()
    events = []
    c.subscribe(events.append)
    r = world.connect(c, grant_agents=["builtin:email"])
    assert r["account"] == "user@example.com" and GMAIL in r["scopes"]
    # the Go shell's layout: connection and client in the service's slots, 0600/0700 ledgers
    kr = c.shell.keyring
    conn = json.loads(kr.get(c.shell.service, "google:default"))
    assert conn["account_email"] == "user@example.com" and conn["refresh_token"]
    assert json.loads(kr.get(c.shell.service, "provider:google"))["client_id"] == "py-client"
    grants = world.home / "connectors" / "grants.json"
    assert stat.S_IMODE(grants.stat().st_mode) == 0o600 and stat.S_IMODE(grants.parent.stat().st_mode) == 0o700
    assert json.loads(grants.read_text()) == {"google": {"builtin:email": sorted(["openid", GMAIL])}}
    tok = c.get_access_token("google", [GMAIL], "builtin:email")
    again = c.get_access_token("google", [GMAIL], "builtin:email")  # the hot path: the cached token
    assert tok["access_token"] == again["access_token"] and tok["expires_at"] > 0
    assert json.loads(kr.get(c.shell.service, "google:access_token"))["access_token"] == tok["access_token"]
    with pytest.raises(grantwire.AuthRequiredError) as e:
        c.get_access_token("google", [GMAIL], "builtin:calendar")
    assert e.value.reason is grantwire.Reason.AGENT_NOT_GRANTED and e.value.exit == 4 and e.value.status == 403
    assert e.value.fix == f"grantwire grants grant google builtin:calendar --scopes {GMAIL}"
    out = c.do("disconnect", {"connector": "google"})
    assert out["removed"] and out["revoked_grants"] == ["builtin:email"] and out["revoked_at_provider"]
    assert kr.get(c.shell.service, "google:default") is None
    assert {e["type"] for e in events} >= {"connector.connected", "connector.grant.changed", "connector.disconnected"}
    # no secret in any file of the home
    secrets = [conn["refresh_token"], tok["access_token"], world.server.secret]
    for f in world.home.rglob("*"):
        if f.is_file():
            assert not any(s in f.read_text(errors="replace") for s in secrets), f


def test_mcp_configure_activate_credential(world):
    c = world.client()
    c.do("configure_mcp", {"connector": "mcp-github", "env_keys": ["GITHUB_PERSONAL_ACCESS_TOKEN"]}, {"env.GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_planted_secret"})
    assert c.do("activate", {"connector": "mcp-github", "agent": "builtin:chat"})["auto_granted"]
    out = c.run("credential", {"connector": "mcp-github", "agent": "builtin:chat"})
    assert out.secret(out.result["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"]["$ref"]) == "ghp_planted_secret"
    assert "ghp_planted_secret" not in (world.home / "mcp_servers.json").read_text()
    assert c.do("deactivate", {"connector": "mcp-github", "agent": "builtin:chat"})["changed"]
    assert c.do("visible_servers", {"agent": "builtin:chat"})["servers"] == []


def test_import_forwarded_and_agent_id(world, tmp_path):
    c = world.client()
    summary = c.do("import_forwarded", {"provider": "google", "scopes": [GMAIL], "account_email": "a@example.com", "grant_agents": []},
                   {"client_id": "fwd-client", "client_secret": "fwd-secret-planted", "refresh_token": "fwd-refresh-planted"})
    assert summary["forwarded"] and "fwd-refresh-planted" not in json.dumps(summary)
    src = tmp_path / "agent.py"
    src.write_text("print('hi')\n")
    assert c.do("agent_id", {"source": str(src), "name": "helper"})["id"].startswith("custom:")  # file.digest
    with pytest.raises(grantwire.ConnectorsError) as e:
        c.do("agent_id", {"source": str(tmp_path / "missing.py")})
    assert e.value.code == "USAGE" and "no such file" in str(e.value)


def test_corrupt_ledger_refused_with_the_go_fix(world):
    c = world.client()
    grants = world.home / "connectors" / "grants.json"
    grants.parent.mkdir(parents=True, mode=0o700)
    grants.write_text('{"google": ')
    os.chmod(grants, 0o600)
    with pytest.raises(grantwire.ConnectorsError) as e:
        c.get_access_token("google", [GMAIL], "builtin:email")
    assert e.value.code == "CORRUPT_LEDGER" and "not valid JSON" in str(e.value) and e.value.fix.startswith("mv ")
    assert grants.read_text() == '{"google": '  # never rewritten
    cli = os.environ.get("GRANTWIRE_CLI", "")
    need(cli and os.path.exists(cli), "GRANTWIRE_CLI names no grantwire binary (the Go test builds it)")
    p = subprocess.run([cli, "token", "google", "--agent", "builtin:email", "--scopes", GMAIL], capture_output=True, text=True,
                       env={**os.environ, **world.env})
    assert p.returncode == e.value.exit, p.stderr
    assert e.value.summary in p.stderr and e.value.fix in p.stderr  # the same error, code and fix as the Go shell


def test_hostile_callbacks_are_refused_and_the_wait_goes_on(world):
    c = world.client()
    c.do("configure_client", {"connector": "google"}, {"client_id": "py-client", "client_secret": "py-client-secret"})
    statuses = []

    def hostile_then_real(url):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        cb = q["redirect_uri"][0]
        for bad in ("?state=forged&code=x", "?code=x", ""):
            try:
                urllib.request.urlopen(cb + bad, timeout=5)
            except urllib.error.HTTPError as e:
                statuses.append(e.code)
        try:
            urllib.request.urlopen(cb.replace("/callback", "/other"), timeout=5)
        except urllib.error.HTTPError as e:
            statuses.append(e.code)
        return follow(url)

    r = c.connect("google", ["openid"], timeout_s=30, show=hostile_then_real)
    assert r["account"] == "user@example.com" and statuses == [400, 400, 400, 404]


def test_insecure_backends_refused(world, monkeypatch):
    # a plaintext or null backend is never used: INSECURE_STORE, nothing written
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    import keyring.core
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    c = world.client()
    with pytest.raises(grantwire.ConnectorsError) as e:
        c.do("configure_client", {"connector": "google"}, {"client_id": "x", "client_secret": "y"})
    # the Go shell's wording: what to install in the message, a private session as the fix
    assert e.value.code == "INSECURE_STORE" and e.value.exit == 5 and "gnome-keyring" in str(e.value)
    assert e.value.fix == 'eval "$(scripts/keyring-session.sh start)"'


def test_no_session_bus_is_the_go_shells_insecure_store(world, monkeypatch):
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    need(not os.path.exists(f"/run/user/{os.getuid()}/bus"), "this machine has a system-wide session bus")
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS")
    c = world.client()
    with pytest.raises(grantwire.ConnectorsError) as e:
        c.do("configure_client", {"connector": "google"}, {"client_id": "x", "client_secret": "y"})
    assert e.value.code == "INSECURE_STORE"
    cli = os.environ.get("GRANTWIRE_CLI", "")
    need(cli and os.path.exists(cli), "GRANTWIRE_CLI names no grantwire binary (the Go test builds it)")
    p = subprocess.run([cli, "configure", "google", "--client-id", "x", "--client-secret-stdin"], input="y\n", capture_output=True,
                       text=True, env={**env, **world.env})
    assert p.returncode == e.value.exit and e.value.summary in p.stderr and e.value.fix in p.stderr, (p.stderr, str(e.value))


def test_locked_keyring_fix_is_the_go_shells(world, monkeypatch):
    # The fix a locked keyring prints is the Go shell's (shells/native/unlock.go UnlockFix), a
    # command the CLI accepts; gnome-keyring-daemon --unlock started a second daemon (issue 20 §2.3).
    go = (pathlib.Path(__file__).resolve().parents[3] / "shells" / "native" / "unlock.go").read_text()
    assert f'const UnlockFix = "{_os.UNLOCK_FIX}"' in go and "gnome-keyring-daemon" not in _os.UNLOCK_FIX

    class Locked:
        def get_password(self, *_):
            raise keyring.errors.KeyringLocked("Failed to unlock the collection!")
    kr = _os.Keyring(str(world.home), str(world.tmp / "locks"))
    monkeypatch.setattr(kr, "backend", Locked)
    with pytest.raises(HostError) as e:
        kr.get("grantwire.test-locked", "x:default")
    fix = e.value.json.get("fix", "")
    assert e.value.json["code"] == "INSECURE_STORE" and fix == "grantwire keyring unlock", e.value.json
    cli = os.environ.get("GRANTWIRE_CLI", "")
    need(cli and os.path.exists(cli), "GRANTWIRE_CLI names no grantwire binary (the Go test builds it)")
    p = subprocess.run([cli, *fix.split()[1:], "--help"], capture_output=True, text=True, env={**os.environ, **world.env})
    assert p.returncode == 0 and "stdin" in p.stdout, p.stdout + p.stderr


def test_large_values_are_chunked_as_gaia_and_go_do(world):
    kr = _os.Keyring(str(world.home), str(world.tmp / "locks"))
    service = "grantwire.test-chunks"
    value = "é" * 1500 + "x" * 3000  # over 1,024 characters and 2,048 bytes
    kr.set(service, "big:default", value)
    assert kr.get(service, "big:default") == value
    raw = kr._call("read", "get_password", service, "big:default")
    assert raw.startswith("\x00gaia-chunked\x00") and raw.count(":") == 1
    parts = [kr._call("read", "get_password", service, f"big:default#{i}") for i in range(int(raw.split("\x00")[2].split(":")[0]))]
    assert "".join(parts) == value and all(len(p) <= 1024 and len(p.encode()) <= 2048 for p in parts)
    kr.set(service, "big:default", "small")  # the stale parts are swept
    assert kr.get(service, "big:default") == "small" and kr._call("read", "get_password", service, "big:default#0") is None
    kr.delete(service, "big:default")
    assert kr.get(service, "big:default") is None


def test_cancel_before_commit_writes_nothing(world):
    c = world.client()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(grantwire.Canceled):
        c.run("grant", {"connector": "google", "agent": "builtin:email", "scopes": [GMAIL]}, cancel=cancel)
    assert not (world.home / "connectors" / "grants.json").exists()


def test_one_item_per_slot_with_the_go_shell(world):
    # The Go CLI writes the client's slot (go-keyring), Python rewrites it (a forwarded import
    # stores client and connection): one item remains, with go-keyring's attributes and label,
    # and the Go CLI reads Python's client (else the connection would be stale: the tripwire).
    import secretstorage
    cli = os.environ.get("GRANTWIRE_CLI", "")
    need(cli and os.path.exists(cli), "GRANTWIRE_CLI names no grantwire binary (the Go test builds it)")
    run = lambda *args, stdin="": subprocess.run([cli, *args], input=stdin, capture_output=True, text=True, env={**os.environ, **world.env})
    assert run("configure", "google", "--client-id", "go-client", "--client-secret-stdin", stdin="go-secret\n").returncode == 0
    c, conn = world.client(), secretstorage.dbus_init()
    # gnome-keyring adds xdg:schema to an item it creates anew (neither shell searches by it),
    # so it is left out of the comparison; the label, the other attributes and the count stay.
    items = lambda: [(i.get_label(), {k: v for k, v in i.get_attributes().items() if k != "xdg:schema"})
                     for i in secretstorage.search_items(conn, {"service": c.shell.service, "username": "provider:google"})]
    go = items()
    assert go == [(f"Password for 'provider:google' on '{c.shell.service}'", {**go[0][1], "service": c.shell.service, "username": "provider:google"})]
    c.do("import_forwarded", {"provider": "google", "scopes": [GMAIL], "account_email": "fwd@example.com", "grant_agents": []},
         {"client_id": "py-client-2", "client_secret": "py-secret-2", "refresh_token": "fwd-refresh"})
    assert items() == go and json.loads(c.shell.keyring.get(c.shell.service, "provider:google"))["client_id"] == "py-client-2"
    row = json.loads(run("status", "google", "--json").stdout)["connectors"][0]
    assert row["configured"] and row["account"] == "fwd@example.com" and row.get("tripwire", "ok") == "ok", row


def test_device_flow(world):
    # RFC 8628 on the local server: the code is shown (prompt.show), the token endpoint polled
    # each interval (clock.sleep) until the user approves on the verification page.
    browser = os.environ.get("GRANTWIRE_STANDIN_BROWSER", "")
    need(browser and os.path.exists(browser), "GRANTWIRE_STANDIN_BROWSER names no stand-in browser (internal/cmd/browser; the Go test builds it)")
    c = world.client()
    c.do("configure_client", {"connector": "google"}, {"client_id": world.server.client_id, "client_secret": world.server.secret})
    shown = []

    def approve(code):
        shown.append(code)
        threading.Thread(target=subprocess.run, args=([browser, code["verification_uri_complete"]],), kwargs={"capture_output": True}).start()

    r = c.connect("google", ["openid", "email"], flow="device", timeout_s=60, on_device_code=approve)
    assert r["account"] == "user@example.com" and shown and shown[0]["user_code"] and "device_code" not in json.dumps(shown)
    assert SEEN["fact:prompt.show"] > 0 and SEEN["fact:clock.sleep"] > 0


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dangling"])
def test_hostile_ledger_files_get_the_go_clis_error(world, kind):
    grants = world.home / "connectors" / "grants.json"
    grants.parent.mkdir(parents=True, mode=0o700)
    if kind == "symlink":
        target = world.tmp / "elsewhere.json"
        target.write_text("{}")
        grants.symlink_to(target)
    elif kind == "dangling":
        grants.symlink_to(world.tmp / "nothing.json")
    else:
        os.mkfifo(grants, 0o600)
    c = world.client()
    with pytest.raises(grantwire.ConnectorsError) as e:
        c.get_access_token("google", [GMAIL], "builtin:email")
    assert e.value.code == "CORRUPT_LEDGER"
    cli = os.environ.get("GRANTWIRE_CLI", "")
    need(cli and os.path.exists(cli), "GRANTWIRE_CLI names no grantwire binary (the Go test builds it)")
    p = subprocess.run([cli, "token", "google", "--agent", "builtin:email", "--scopes", GMAIL], capture_output=True, text=True,
                       env={**os.environ, **world.env}, timeout=60)
    assert p.returncode == e.value.exit and e.value.summary in p.stderr and e.value.fix in p.stderr, (p.stderr, str(e.value))


def test_every_kind_was_validated():
    # the operations of this file exchange every kind of need and effect but lock.release, which
    # no operation of the policy emits (the driver releases every lock when an operation ends)
    if os.environ.get("GRANTWIRE_REAL_KEYRING") == "0":
        pytest.skip("GRANTWIRE_REAL_KEYRING=0: the real-keyring tests are skipped on purpose")
    need(SEEN["query"] > 0, "no operation ran on the real world (see the skips above)")
    for kind in ("clock.now", "clock.sleep", "entropy", "env.get", "keyring.info", "keyring.get", "ledger.read", "file.digest",
                 "lock.acquire", "http.request", "loopback.open", "loopback.wait", "prompt.show"):
        assert SEEN["fact:" + kind] > 0, kind
    for kind in ("keyring.set", "keyring.delete", "ledger.write", "event.emit", "http.send"):
        assert SEEN["effect:" + kind] > 0, kind
    assert SEEN["query"] > 20 and SEEN["decision"] == SEEN["query"]
