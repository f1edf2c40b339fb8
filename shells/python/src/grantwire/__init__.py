"""grantwire for Python: which AI agent may use which external connection, with which
scopes, with every secret in the OS credential store — the same decisions as grantwire's Go
build, byte for byte.

The decisions come from policy.wasm (the file the Go build embeds, packaged here) run by
wasmtime; this package is a thin shell that performs the policy's needs and effects (the host
ABI grantwire.host.v2) on this machine: the OS keyring through `keyring` (GAIA's library, the
Go shell's slots), the ledger files under the home with the Go shell's locks, HTTP, and the
PKCE loopback. Go and Python processes share one home and one keyring service safely.

The module-level functions have the shape of GAIA's ``gaia.connectors`` API, so a GAIA user
switches by changing an import; ``Client`` is the same on a chosen home, service or catalog.
"""

import asyncio
import contextlib
import contextvars
import json
import os
import threading
import uuid
from importlib import resources

from . import _driver, _os
from ._driver import Canceled, Outcome
from ._engine import Engine
from ._host import Host
from ._json import Corrupt, parse
from .errors import (AuthRequiredError, ConfigurationError, ConnectionRevokedError, ConnectorsError, ConsentDeniedError,
                     FlowInProgressError, FlowTimeoutError, GrantwireError, OAuthProviderError, Reason, ScopeMismatchError,
                     UnknownAgentError, error_for)

__all__ = [
    "Client", "Canceled", "Outcome", "AuthRequiredError", "ConfigurationError", "ConnectionRevokedError", "ConnectorsError",
    "ConsentDeniedError", "FlowInProgressError", "FlowTimeoutError", "GrantwireError", "OAuthProviderError", "Reason",
    "ScopeMismatchError", "UnknownAgentError", "activate", "agent_context", "cancel_flow", "complete_authorization",
    "current_agent_id", "deactivate", "get_access_token", "get_access_token_sync", "get_access_token_with_expiry",
    "grant_agent", "import_forwarded", "import_forwarded_connection", "list_agent_grants", "revoke_agent",
    "revoke_agent_grant", "start_authorization", "version",
]

_agent = contextvars.ContextVar("gaia_connections_agent_id", default=None)


def current_agent_id():
    """The agent the calling context runs as (set with agent_context), or None."""
    return _agent.get()


@contextlib.contextmanager
def agent_context(agent_id):
    """Runs the body as agent_id: get_access_token without agent_id uses it."""
    token = _agent.set(agent_id)
    try:
        yield
    finally:
        _agent.reset(token)


def _packaged(name):
    return resources.files(__package__).joinpath(name).read_bytes()


def version():
    """What `grantwire version --json` says of the Go build this package was built with: the
    version, the policy's sha256 and revision; plus the package's own version and runtime."""
    import importlib.metadata

    import wasmtime
    info = json.loads(_packaged("_build.json"))
    return {**info, "package": importlib.metadata.version("grantwire"), "engine": "wasm",
            "runtime": "wasmtime " + importlib.metadata.version("wasmtime")}


class Client:
    """grantwire's operations on one shell (by default the OS shell on $GRANTWIRE_HOME) and
    catalog (by default the packaged one, or the file $GRANTWIRE_CATALOG names). Safe for
    concurrent use from threads and asyncio."""

    def __init__(self, home=None, service=None, catalog=None, *, shell=None, lock_dir=None, browser=None, interactive=None, out=None):
        self.shell = shell or _os.Shell(home, service, lock_dir, browser, interactive, out)
        builtin = json.loads(_packaged("agents.json"))["agents"]
        catalog = catalog if catalog is not None else os.environ.get("GRANTWIRE_CATALOG") or None
        if isinstance(catalog, str):
            with open(catalog, "rb") as f:
                raw = f.read((8 << 20) + 1)
            try:
                doc = parse(raw)
            except Corrupt as e:
                raise ConfigurationError({"code": "CONFIGURATION", "message": f"catalog: {catalog}: {e}"}) from None
            check = {"strict": True, "file": catalog}
        else:
            doc = catalog if catalog is not None else json.loads(_packaged("catalog.json"))
            check = {"strict": False} if catalog is not None else None
        if not isinstance(doc, dict) or not isinstance(doc.get("connectors"), dict):
            raise ConfigurationError({"code": "CONFIGURATION", "message": "catalog: not a JSON object with connectors"})
        self.engine = Engine({"catalog": {"connectors": doc["connectors"]}, "agents": {"builtin": builtin}})
        self.host = Host(self.shell)
        if check is not None:
            self.do("validate_catalog", check)

    def subscribe(self, fn):
        """Calls fn({type, payload}) for every event an operation of this client emits (on the OS
        shell; a shell given as capabilities emits through its own emit)."""
        self.shell.subscribers.append(fn)

    def run(self, op, args, secrets=None, cancel=None):
        """Runs any operation by name; returns the Outcome (result, secret(ref)), raising its error."""
        out = _driver.run(self.engine, self.host, op, args, secrets, cancel)
        if out.error is not None:
            raise error_for(out.error, self.engine.manifest.get("errors"))
        return out

    def do(self, op, args, secrets=None, cancel=None):
        """Runs an operation and returns its result (a JSON object, secrets as references)."""
        return self.run(op, args, secrets, cancel).result

    def get_access_token(self, provider, scopes, agent):
        """{provider, access_token (the secret), expires_at (Unix ms), scopes} for agent."""
        out = self.run("get_access_token", {"provider": provider, "scopes": list(scopes), "agent": agent})
        return {**out.result, "access_token": out.secret(out.result["access_token"]["$ref"])}

    def connect(self, provider, scopes, grant_agents=(), *, timeout_s=None, flow=None, show=None, on_device_code=None, cancel=None):
        """Authorizes a provider: in a browser that comes back to the loopback (show(url), when
        given, shows the authorization URL instead of the browser), or with flow="device" on
        another device (on_device_code(code), when given, receives what the user must enter
        where, instead of the terminal; it must not block)."""
        args = {"connector": provider, "scopes": list(scopes), "grant_agents": list(grant_agents)}
        args.update({"timeout_ms": int(timeout_s * 1000)} if timeout_s is not None else {}, **({"flow": flow} if flow else {}))
        tokens = [(var, var.set(fn)) for var, fn in ((_os.browser_override, show), (_os.prompt_override, on_device_code)) if fn]
        try:
            return self.do("connect", args, cancel=cancel)
        finally:
            for var, token in tokens:
                var.reset(token)


_default_client, _default_lock, _flows = None, threading.Lock(), {}


def _client():
    global _default_client
    with _default_lock:
        if _default_client is None:
            _default_client = Client()
        return _default_client


def _agent_of(agent_id):
    agent = agent_id if agent_id is not None else current_agent_id()
    return "" if agent is None else agent  # grantwire has no opt-out: the policy refuses a missing agent


def get_access_token_sync(*, provider, scopes, agent_id=None, account_email="default"):
    """The access token of provider for the agent (agent_id, else current_agent_id()), after
    the two-layer gate; refreshed under the provider's lock when it has 60 s or less left."""
    return _client().get_access_token(provider, scopes, _agent_of(agent_id))["access_token"]


async def get_access_token(*, provider, scopes, agent_id=None, account_email="default"):
    """get_access_token_sync, without blocking the event loop."""
    ctx = contextvars.copy_context()
    return await asyncio.to_thread(ctx.run, get_access_token_sync, provider=provider, scopes=scopes, agent_id=agent_id)


async def get_access_token_with_expiry(*, provider, scopes, agent_id=None, account_email="default"):
    """(token, expires_at in Unix seconds)."""
    agent = _agent_of(agent_id)
    tok = await asyncio.to_thread(_client().get_access_token, provider, scopes, agent)
    return tok["access_token"], tok["expires_at"] / 1000


def grant_agent(connector_id, agent_id, scopes):
    """Replaces the scopes agent_id holds on connector_id; returns the grant."""
    return _client().do("grant", {"connector": connector_id, "agent": agent_id, "scopes": list(scopes)})


def revoke_agent_grant(connector_id, agent_id):
    """Removes agent_id's grant on connector_id (and its activation); True if it changed anything."""
    return _client().do("revoke", {"connector": connector_id, "agent": agent_id})["changed"]


revoke_agent = revoke_agent_grant


def list_agent_grants(connector_id):
    """{agent: scopes} on connector_id."""
    return _client().do("list_grants", {"connector": connector_id})["grants"]


def activate(connector_id, agent_id, *, scopes_for_grant=None):
    """Shows an MCP connector's tools to agent_id; grants scopes_for_grant (else the agent's
    declared scopes) when it holds no grant. True when it granted."""
    args = {"connector": connector_id, "agent": agent_id, **({"scopes": list(scopes_for_grant)} if scopes_for_grant is not None else {})}
    return _client().do("activate", args)["auto_granted"]


def deactivate(connector_id, agent_id):
    """Hides an MCP connector's tools from agent_id; the grant is kept."""
    _client().do("deactivate", {"connector": connector_id, "agent": agent_id})


def import_forwarded_connection(*, provider, client_id, client_secret, refresh_token, scopes, account_email="",
                                account_type=None, grant_agents=None, required_scopes=None, connected_at=None):
    """Stores a connection a host application forwarded (its client and the user's refresh
    token) and grants grant_agents; returns its metadata, never a secret. The scopes must cover
    what every listed agent declares (grantwire derives the required scopes from the agents'
    declarations, so required_scopes and connected_at are not taken)."""
    if required_scopes is not None or connected_at is not None:
        raise TypeError("grantwire derives the required scopes from the agents' declarations and stamps connected_at itself: "
                        "pass neither required_scopes nor connected_at")
    args = {"provider": provider, "scopes": list(scopes), "account_email": account_email, "grant_agents": list(grant_agents or [])}
    if account_type:
        args["account_type"] = account_type
    secrets = {"client_id": client_id, "client_secret": client_secret, "refresh_token": refresh_token}
    return _client().do("import_forwarded", args, secrets)


import_forwarded = import_forwarded_connection


async def start_authorization(provider_id, scopes, grant_agents=None, *, timeout_s=120):
    """Starts connecting provider_id (PKCE through a loopback on 127.0.0.1) and returns
    {flow_id, authorization_url} once the URL is known: open it in a browser, then await
    complete_authorization(flow_id)."""
    client, flow_id, ready, cancel = _client(), uuid.uuid4().hex, threading.Event(), threading.Event()
    box, loop = {}, asyncio.get_running_loop()
    done = loop.create_future()

    def show(url):
        box["url"] = url
        ready.set()
        return True

    def work():
        try:
            r = client.connect(provider_id, scopes, grant_agents or (), timeout_s=timeout_s, show=show, cancel=cancel)
            loop.call_soon_threadsafe(lambda: done.done() or done.set_result(r))
        except BaseException as e:  # noqa: BLE001 - handed to complete_authorization
            loop.call_soon_threadsafe(lambda: done.done() or done.set_exception(e))
        finally:
            ready.set()

    threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True).start()
    await asyncio.to_thread(ready.wait)
    if "url" not in box:
        await done  # it ended before there was a URL to show: raise its error
    _flows[flow_id] = (done, cancel)
    return {"flow_id": flow_id, "authorization_url": box["url"]}


async def complete_authorization(flow_id):
    """Waits for the user to authorize; returns {provider, account_email, scopes, granted, ...}."""
    if flow_id not in _flows:
        raise ConnectorsError({"code": "USAGE", "message": f"no authorization flow {flow_id}"})
    done, _ = _flows[flow_id]
    try:
        r = await done
    finally:
        _flows.pop(flow_id, None)
    return {"provider": r["connector"], "account_email": r["account"], **r}


def cancel_flow(flow_id):
    """Cancels a started authorization (nothing is stored)."""
    if flow_id in _flows:
        _flows[flow_id][1].set()
