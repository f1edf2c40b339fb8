"""Build hooks of the grantwire wheel: the package's version is the Go build's
(GRANTWIRE_VERSION, what `go build -ldflags "-X main.version=..."` sets; unset is Go's
"(devel)"), and the wheel carries the repository's policy/policy.wasm (checked against
policy/policy.wasm.sha256), catalog/catalog.json and catalog/agents.json, copied at build
time, with _build.json saying which Go version and policy it was built from."""

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

FILES = {"policy/policy.wasm": "policy.wasm", "catalog/catalog.json": "catalog.json", "catalog/agents.json": "agents.json"}


def go_version():
    """The Go build's version string: GRANTWIRE_VERSION, else "(devel)"."""
    return os.environ.get("GRANTWIRE_VERSION", "").strip() or "(devel)"


def python_version(go):
    """The PEP 440 form of a Go version: v1.2.3 -> 1.2.3, v1.2.3-rc.1 -> 1.2.3rc1, (devel) -> 0.0.0.dev0."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta|rc)\.?(\d+))?", go)
    if not m:
        return "0.0.0.dev0"
    pre = {"alpha": "a", "beta": "b", "rc": "rc"}.get(m[4] or "", "")
    return f"{m[1]}.{m[2]}.{m[3]}" + (f"{pre}{m[5]}" if pre else "")


class VersionHook(MetadataHookInterface):
    def update(self, metadata):
        metadata["version"] = python_version(go_version())


class PolicyHook(BuildHookInterface):
    def initialize(self, version, build_data):
        root, repo = Path(self.root), Path(self.root).parent.parent
        sources = {}
        for src, name in FILES.items():
            path = repo / src
            if not path.is_file():  # building from an sdist, which carries the copies
                path = root / "src" / "grantwire" / name
            if not path.is_file():
                raise RuntimeError(f"grantwire: {src} not found (build from a grantwire checkout: pip install ./shells/python)")
            sources[name] = path
        wasm = sources["policy.wasm"].read_bytes()
        sha = hashlib.sha256(wasm).hexdigest()
        committed = repo / "policy" / "policy.wasm.sha256"
        if committed.is_file() and committed.read_text().split()[0] != sha:
            raise RuntimeError("grantwire: policy/policy.wasm does not match policy/policy.wasm.sha256: run make wasm")
        out = Path(tempfile.mkdtemp(prefix="grantwire-build-")) / "_build.json"
        out.write_text(json.dumps({"version": go_version(), "policy_sha256": sha, "policy_revision": "sha256:" + sha[:16]}) + "\n")
        prefix = "src/grantwire/" if self.target_name == "sdist" else "grantwire/"
        for name, path in sources.items():
            build_data["force_include"][str(path)] = prefix + name
        build_data["force_include"][str(out)] = prefix + "_build.json"
