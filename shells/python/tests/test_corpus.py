"""The whole conformance corpus on the Python shell (corpus.py), one test per scenario, against the
test worlds' one authorization server over real HTTP: its control API at
GRANTWIRE_AUTHSERVER_WORLDS (python_test.go serves it), else the binary GRANTWIRE_AUTHSERVER
started with -worlds. Every query, decision, need, fact and effect is validated against
hostabi/schema. A scenario listed for this shell in exceptions.yaml must fail (there is none).

With GRANTWIRE_PY_CORPUS_OUT (a directory) it writes for the Go test queries.jsonl (per catalog
its policy data once, then every query the Python driver asked with the decision, as the
engine's bytes) and report.json (per scenario: passed, failures; per corpus file: the YAML as
read), which python_test.go compares with the Go memory host's run of the same corpus."""

import collections
import json
import os
import pathlib
import subprocess
import sys
import time
import types

import pytest
from conftest import CORPUS_SUMMARY, REPO, need, watch
from corpus import SHELL, Corpus

CORPUS = Corpus(REPO, None, None)
OUT = pathlib.Path(os.environ["GRANTWIRE_PY_CORPUS_OUT"]) if os.environ.get("GRANTWIRE_PY_CORPUS_OUT") else None
SEEN = collections.Counter()


class Run:
    """What the run records: the scenario running, the lines of queries.jsonl, the results."""

    def __init__(self):
        self.scenario, self.results, self.started = "", [], time.monotonic()
        self.queries = open(OUT / "queries.jsonl", "w") if OUT else None
        self.data_seen = set()

    def line(self, **v):
        if self.queries:
            self.queries.write(json.dumps(v, ensure_ascii=False) + "\n")

    def on_data(self, data_id, data):
        if data_id not in self.data_seen:
            self.data_seen.add(data_id)
            self.line(data_id=data_id, scenario=self.scenario, data=data)
        self.data_id = data_id

    def watch(self, x):
        record = lambda q, d: self.line(scenario=self.scenario, data_id=self.data_id, query=q.decode(), decision=d.decode())
        return watch(x, record, SEEN)

    def finish(self):
        self.queries and self.queries.close()
        if OUT:
            report = {"shell": SHELL, "python": sys.version.split()[0], "scenarios": self.results, "seen": dict(SEEN),
                      "files": [{"name": n, "json": json.dumps(d, ensure_ascii=False)} for n, d in CORPUS.files]}
            (OUT / "report.json").write_text(json.dumps(report))
        if not self.results:  # pytest -k without a scenario
            return
        families = {}
        for r in self.results:
            c = families.setdefault(r["family"], [0, 0, 0])
            c[0 if r["passed"] else 1] += 1
            c[2] += r["exception"] is not None and r["passed"]
        for f, (ok, bad, known) in families.items():
            CORPUS_SUMMARY.append(f"family {f}: {ok} passed, {bad} failed" + (f" ({known} known differences)" if known else ""))
        passed = sum(r["passed"] for r in self.results)
        CORPUS_SUMMARY.append(f"conformance on {SHELL} (python {sys.version.split()[0]}): {len(self.results)} scenarios in "
                              f"{time.monotonic() - self.started:.2f} s; validated against hostabi/schema: {sum(SEEN.values())} values")
        CORPUS_SUMMARY.append(f"{passed} passed, {len(self.results) - passed} failed")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    hub, proc = os.environ.get("GRANTWIRE_AUTHSERVER_WORLDS", ""), None
    if not hub:
        binary = os.environ.get("GRANTWIRE_AUTHSERVER", "")
        need(binary and os.path.exists(binary), "neither GRANTWIRE_AUTHSERVER_WORLDS (a control API) nor GRANTWIRE_AUTHSERVER "
             "(go build -o build/python/bin/ ./internal/cmd/authserver) names the authorization server")
        proc = subprocess.Popen([binary, "-worlds"], stdout=subprocess.PIPE, text=True)
        hub = json.loads(proc.stdout.readline())["url"]
    CORPUS.hub, r = hub, Run()
    CORPUS.watch = r.watch
    yield r
    r.finish()
    if proc:
        proc.terminate()
        proc.wait(10)


def test_the_corpus_is_whole():
    assert len(CORPUS.scenarios) >= 230 and len({s["family"] for s in CORPUS.scenarios}) >= 12


@pytest.mark.parametrize("s", CORPUS.scenarios, ids=[s["id"] for s in CORPUS.scenarios])
def test_scenario(run, s):
    run.scenario = s["id"]
    try:
        failures = CORPUS.run(s, run.on_data)
    except Exception as e:  # noqa: BLE001 - a scenario that cannot run fails
        failures = [f"the scenario could not run: {e!r}"]
    reason = CORPUS.exceptions.get(s["id"], {}).get(SHELL)
    passed, note = not failures, ""
    if reason is not None:
        note = f"known difference on {SHELL} no longer differs; remove it from exceptions.yaml ({reason})" if passed else f"known difference: {reason}"
        passed = not passed
    run.results.append({"id": s["id"], "family": s["family"], "passed": passed, "failures": failures, "exception": reason, "note": note})
    assert passed, "\n".join(failures + [note])


def test_the_runner_and_the_schemas_can_fail(run):
    # a scenario whose expectation is wrong fails, and so do a query or a fact off the schema
    s, recording = next(s for s in CORPUS.scenarios if s["final"]["events"]), CORPUS.watch
    CORPUS.watch = lambda x: watch(x, None, collections.Counter())  # neither recorded nor counted
    try:
        assert any("final: events" in f for f in CORPUS.run({**s, "final": {**s["final"], "events": []}}))
    finally:
        CORPUS.watch = recording
    engine, host = types.SimpleNamespace(on_decide=None), types.SimpleNamespace(trace=lambda line: None)
    watch(engine), watch(host)
    with pytest.raises(AssertionError, match="query.schema.json"):
        engine.on_decide(json.dumps({"op": "grant", "args": {}, "facts": {"g.grants": {"value": 1.5}}}).encode(), b"{}")
    with pytest.raises(AssertionError, match="keyring.get"):
        host.trace('==> {"key":"k","kind":"keyring.get","user":"u"}\n<== {"found":"yes"}')
