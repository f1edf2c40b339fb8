"""The GAIA-shaped API: the reasons, the error classes and their fields, sync and async token
hand-outs, the agent context, activate's answer, the forwarded import's metadata."""

import asyncio

import pytest
from conftest import GMAIL

import grantwire


def test_reasons_are_gaias_five():
    assert [r.value for r in grantwire.AuthRequiredError.Reason] == [
        "not_connected", "agent_not_granted", "connection_missing_scopes", "reauth_required", "tenant_mismatch"]
    assert issubclass(grantwire.AuthRequiredError, grantwire.ConnectorsError)
    assert issubclass(grantwire.ConfigurationError, grantwire.ConnectorsError)


def test_not_connected_then_connected(world):
    grantwire.grant_agent("google", "builtin:email", [GMAIL])
    with pytest.raises(grantwire.AuthRequiredError) as e:
        grantwire.get_access_token_sync(provider="google", scopes=[GMAIL], agent_id="builtin:email")
    assert e.value.reason is grantwire.Reason.NOT_CONNECTED and e.value.provider == "google"
    world.connect(grantwire._default_client)
    with grantwire.agent_context("builtin:email"):
        tok = grantwire.get_access_token_sync(provider="google", scopes=[GMAIL])
        assert asyncio.run(grantwire.get_access_token(provider="google", scopes=[GMAIL])) == tok
        t2, exp = asyncio.run(grantwire.get_access_token_with_expiry(provider="google", scopes=[GMAIL]))
        assert t2 == tok and exp > 1.7e9
    with pytest.raises(grantwire.AuthRequiredError) as e:
        grantwire.get_access_token_sync(provider="google", scopes=["https://www.googleapis.com/auth/gmail.send"],
                                        agent_id="builtin:email")
    assert e.value.reason is grantwire.Reason.AGENT_NOT_GRANTED
    assert e.value.missing_scopes == ["https://www.googleapis.com/auth/gmail.send"]
    assert revoke(), "revoking a grant that exists changes something"


def revoke():
    return grantwire.revoke_agent_grant("google", "builtin:email") and not grantwire.revoke_agent("google", "builtin:email")


def test_activate_is_mcp_only(world):
    assert grantwire.activate("mcp-github", "builtin:chat", scopes_for_grant=["use"]) is True
    assert grantwire.activate("mcp-github", "builtin:chat") is False  # an existing grant is kept
    with pytest.raises(grantwire.ConfigurationError) as e:
        grantwire.activate("google", "builtin:chat", scopes_for_grant=["use"])
    assert e.value.exit == 3


def test_forwarded_scope_mismatch_writes_nothing(world):
    with pytest.raises(grantwire.ScopeMismatchError) as e:
        grantwire.import_forwarded_connection(provider="google", client_id="c", client_secret="s", refresh_token="planted-rt",
                                              scopes=[GMAIL], grant_agents=["builtin:email"])
    assert "planted-rt" not in str(e.value) and e.value.status == 403
    with pytest.raises(TypeError):
        grantwire.import_forwarded_connection(provider="google", client_id="c", client_secret="s", refresh_token="r",
                                              scopes=[GMAIL], required_scopes=[])


def test_a_missing_runtime_names_its_install():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", "import sys; sys.modules['wasmtime'] = None; import grantwire"], capture_output=True, text=True)
    assert p.returncode != 0 and "pip install 'wasmtime>=50,<51'" in p.stderr, p.stderr
