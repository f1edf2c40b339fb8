"""Replays the queries the Go corpus run asked (written by the Go test as JSON lines:
{data_id, data} once per catalog, then {data_id, query}) through the Python engine, writing
each decision as OPA's bytes for the Go test, which demands them byte-identical (canonical
JSON) to the Go wasm and native engines' decisions. (The Python driver's own queries,
decisions, needs, facts and effects are validated against hostabi/schema in test_world.py.)"""

import json
import os

from conftest import need

from grantwire._engine import Engine


def test_replay_go_corpus_queries():
    src, dst = os.environ.get("GRANTWIRE_REPLAY_IN", ""), os.environ.get("GRANTWIRE_REPLAY_OUT", "")
    need(src and os.path.exists(src), "GRANTWIRE_REPLAY_IN names no file of recorded queries (the Go test writes it)")
    engines, n = {}, 0
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            rec = json.loads(line)
            if "data" in rec:
                engines[rec["data_id"]] = Engine(rec["data"].encode() if isinstance(rec["data"], str) else rec["data"])
                continue
            d = engines[rec["data_id"]].evaluate("grantwire/decide", rec["query"].encode())
            out.write(json.dumps({"i": n, "decision": d.decode()}) + "\n")
            n += 1
    assert n > 0
