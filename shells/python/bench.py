"""Micro-benchmark of the gate's hot path in Python (a granted agent whose access token is
cached and fresh: no lock, no request). It reports; it asserts only that the path measured is
the hot path. Run with a Secret Service and the local authorization server binary:

  GRANTWIRE_AUTHSERVER=build/python/bin/authserver scripts/with-keyring.sh \\
      build/python/venv-*/bin/python shells/python/bench.py [--ms 2000] [--query FILE]

decide: one evaluation of grantwire/decide on wasmtime on the hot path's query (JSON encoding
        of the query and decoding of the decision included).
token:  Client.get_access_token, the whole cached hand-out through the Python driver and host
        on the OS shell (the connection read from the Secret Service, as every hand-out does).
--query writes the hot path's query (for BenchmarkPythonHotQuery on the Go engines)."""

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent / "tests"))
import conftest  # noqa: E402  the tests' world: the local authorization server, a home

import grantwire  # noqa: E402


def measure(f, budget_ms):
    for _ in range(200):
        f()
    samples, until = [], time.perf_counter() + budget_ms / 1000
    while time.perf_counter() < until or len(samples) < 5:
        t0 = time.perf_counter_ns()
        for _ in range(50):
            f()
        samples.append((time.perf_counter_ns() - t0) / 50)
    return statistics.median(samples), min(samples), len(samples) * 50


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ms", type=int, default=2000)
    ap.add_argument("--query")
    a = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="grantwire-bench-"))
    import os
    server = conftest.Server(os.environ["GRANTWIRE_AUTHSERVER"], tmp)
    try:
        world = conftest.World(tmp, server)
        c = grantwire.Client(str(world.home), catalog=str(world.catalog), lock_dir=str(tmp / "locks"), browser=False, interactive=False)
        world.connect(c, grant_agents=["builtin:email"])
        first = c.get_access_token("google", [conftest.GMAIL], "builtin:email")
        hot = []
        c.engine.on_decide = lambda q, d: hot.append(q)
        again = c.get_access_token("google", [conftest.GMAIL], "builtin:email")
        c.engine.on_decide = None
        if again["access_token"] != first["access_token"] or len(hot) != 2:
            raise SystemExit(f"not the hot path: {len(hot)} questions")
        query = hot[-1]
        if a.query:
            pathlib.Path(a.query).write_bytes(query)
        fmt = lambda m: f"{m[0] / 1000:.1f} µs/op (min {m[1] / 1000:.1f} µs, {m[2]} calls)"
        print(f"python {sys.version.split()[0]}, {grantwire.version()['runtime']}, policy.wasm; gate hot path ({len(query)}-byte query, 2 questions)")
        print("decide ", fmt(measure(lambda: c.engine.decide(__import__("json").loads(query)), a.ms)))
        print("token  ", fmt(measure(lambda: c.get_access_token("google", [conftest.GMAIL], "builtin:email"), a.ms)))
    finally:
        server.close()


if __name__ == "__main__":
    main()
