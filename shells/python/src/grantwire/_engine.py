# The core in Python: policy.wasm (the very file Go embeds, packaged beside this module) on
# wasmtime through OPA's Wasm ABI (_opa.py), with the catalog as data, answering
# grantwire/decide and grantwire/manifest.

import json
from importlib import resources

from ._opa import Policy, PolicyError


def policy_wasm():
    """The bytes of the packaged policy.wasm."""
    try:
        return resources.files(__package__).joinpath("policy.wasm").read_bytes()
    except FileNotFoundError:
        raise PolicyError("policy.wasm is missing from the grantwire package: reinstall it from a checkout (pip install ./shells/python)") from None


class Engine:
    """policy.wasm with policy data (a JSON object, or its bytes); decide() is safe for
    concurrent use. on_decide(query_bytes, decision_bytes), when set, sees every evaluation."""

    def __init__(self, data, wasm=None):
        raw = data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode()
        self._policy, self.on_decide = Policy(wasm if wasm is not None else policy_wasm(), raw), None
        self.manifest = json.loads(self._policy.evaluate("grantwire/manifest", b"{}"))

    def decide(self, query):
        """The decision on a query (a JSON object)."""
        raw = json.dumps(query, ensure_ascii=False, separators=(",", ":")).encode()
        out = self._policy.evaluate("grantwire/decide", raw)
        self.on_decide and self.on_decide(raw, out)
        return json.loads(out)
