# The driver loop of the host ABI (hostabi/README.md, "The driver loop"; hostabi.Driver in
# Go): gather facts -> ask the core -> apply what it decides -> repeat. It knows no operation
# and no kind by name: per operation it reads only the manifest's prefetch templates.

import json
import threading

from ._host import Canceled, Conflict

MAX_ROUNDS = 400  # a device connect polls up to 300 times (hostabi.MaxRounds)
COMMIT_TIMEOUT_S = 60.0


class Outcome:
    """A finished operation: result or error (JSON objects from the core), the rounds it took,
    whether a host failure ended it, and secret(ref), which resolves a result's reference."""

    def __init__(self, decision, rounds, host_failure, refs):
        self.result, self.error = decision.get("result"), decision.get("error")
        self.rounds, self.host_failure, self._refs = rounds, host_failure, refs

    def secret(self, ref):
        return self._refs[ref]


def run(engine, host, op, args, secrets=None, cancel=None):
    """Performs one operation. secrets are its secret arguments (described to the core under
    facts.arg); cancel, optional, is a threading.Event the caller sets to cancel, honoured until
    a need marked commit is on the wire (from there the operation finishes under its own
    deadline). Raises Canceled, or on a bug (a policy that never finishes)."""
    o = host.begin()
    try:
        arg = {k: o.describe("arg#" + k, v) for k, v in sorted((secrets or {}).items()) if v != ""}
        base = {"arg": arg} if arg else {}
        query = {"op": op, "args": args, "facts": dict(base), "attempt": 0, "round": 0}
        pending = instantiate(engine.manifest.get("ops", {}).get(op, {}).get("prefetch", []), args)
        host_failure, committed = False, False

        def check_cancel():
            if not committed and cancel is not None and cancel.is_set():
                raise Canceled(f"{op} canceled before anything was written")

        while query["round"] < MAX_ROUNDS:
            facts = query["facts"]
            for n in pending:
                if n["key"] in facts or ("after" in n and facts.get(n["after"]) != "held"):
                    continue
                check_cancel()
                if n.get("commit") and not committed:
                    committed, cancel = True, _deadline(COMMIT_TIMEOUT_S)
                facts[n["key"]] = fact = o.fetch(n, cancel)
                host_failure = host_failure or (isinstance(fact, dict) and "host_error" in fact)
            d = engine.decide(query)
            if d["status"] == "need":
                pending = d["needs"]
                query["round"] += 1
                continue
            if d["effects"]:
                check_cancel()
            failure = o.apply(d["effects"], cancel)
            if failure is None:
                return Outcome(d, query["round"], host_failure, o.refs)
            pending = []
            if isinstance(failure, Conflict):
                # A precondition failed: decide again from fresh facts, keeping the locks held.
                query["attempt"] += 1
                query["facts"] = {**base, **{k: v for k, v in facts.items() if v == "held"}}
            else:
                host_failure = True  # the core reports it, and decides that nothing more is applied
                facts[f"apply@{query['attempt']}"] = {"host_error": failure.json}
            query["round"] += 1
        raise RuntimeError(f"driver: {op} asked more than {MAX_ROUNDS} questions")
    finally:
        o.end()


def _deadline(seconds):
    """An event set after seconds: the operation's own deadline once it has committed."""
    ev = threading.Event()
    t = threading.Timer(seconds, ev.set)
    t.daemon = True
    t.start()
    return ev


def instantiate(templates, args):
    """Turns prefetch templates into needs: {"$arg": name} becomes that string argument; a
    template whose argument is missing or not a string is dropped (the core asks for what it
    needs, or reports the usage error, in its first answer)."""
    out = []
    for t in templates:
        complete = True

        def arg(v):
            nonlocal complete
            if isinstance(v, dict) and isinstance(v.get("$arg"), str):
                if not isinstance(args.get(v["$arg"]), str):
                    complete = False
                return args.get(v["$arg"])
            return v

        need = json.loads(json.dumps(t), object_hook=arg)
        if complete:
            out.append(need)
    return out
