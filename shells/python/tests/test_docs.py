"""Runs every grantwire example of docs/python.md on the real world, and checks that each
differs from the GAIA example before it by the import line alone: a GAIA user switches by
changing an import. The user's browser is played by a print that follows the URL it is shown."""

import re
import threading

import pytest
from conftest import REPO, follow

import grantwire

PAGE = (REPO / "docs" / "python.md").read_text()
BLOCKS = re.findall(r"```python (gaia|grantwire)\n(.*?)```", PAGE, re.S)
PAIRS = [(BLOCKS[i][1], BLOCKS[i + 1][1]) for i in range(0, len(BLOCKS), 2)]


def test_blocks_come_in_pairs():
    assert len(BLOCKS) >= 8 and [k for k, _ in BLOCKS] == ["gaia", "grantwire"] * (len(BLOCKS) // 2)


@pytest.mark.parametrize("gaia,ours", PAIRS, ids=lambda s: s.strip().splitlines()[-1][:40] if isinstance(s, str) else "")
def test_only_the_import_differs(gaia, ours):
    assert gaia.replace("gaia.connectors", "grantwire") == ours


def test_examples_run_in_order(world, capsys):
    c = grantwire._default_client
    c.do("configure_client", {"connector": "google"}, {"client_id": world.server.client_id, "client_secret": world.server.secret})

    def user_print(*args, **kw):
        print(*args, **kw)
        if args and args[0] == "Open this URL:":
            threading.Thread(target=follow, args=(args[1],), daemon=True).start()

    for _, ours in PAIRS:
        exec(compile(ours, "docs/python.md", "exec"), {"print": user_print, "__name__": "__main__"})
    out = capsys.readouterr().out
    assert "Connected as user@example.com" in out and "Bearer token:" in out
    assert "agent_not_granted ['https://www.googleapis.com/auth/gmail.send']" in out
    assert "fix: grantwire grants grant google builtin:calendar --scopes" in out
    assert "True ['builtin:email']" in out
    assert grantwire.list_agent_grants("mcp-github") == {}
