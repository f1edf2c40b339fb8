# The driver loop of the host ABI (hostabi/README.md, "The driver loop"; hostabi.Driver in
# Go): gather facts -> ask the core -> apply what it decides -> repeat. It knows no operation
# and no kind by name: per operation it reads only the manifest's prefetch templates.

import collections
import json
import threading

from ._host import Canceled, Conflict

MAX_ROUNDS = 400  # a device connect polls up to 300 times (hostabi.MaxRounds)
COMMIT_TIMEOUT_S = 60.0


# A finished operation: result or error (JSON objects from the core), the rounds it took,
# whether a host failure ended it, and secret(ref), which resolves a result's reference.
Outcome = collections.namedtuple("Outcome", "result error rounds host_failure secret")


def run(engine, host, op, args, secrets=None, cancel=None):
    """Performs one operation. secrets are its secret arguments (described to the core under
    facts.arg); cancel, optional, is a threading.Event the caller sets to cancel, honoured until
    a need marked commit is on the wire (from there the operation finishes under its own
    deadline). Raises Canceled, or on a bug (a policy that never finishes)."""
    o, committed = host.begin(), False

    def check():  # the caller's cancellation, until something is committed
        if not committed and cancel is not None and cancel.is_set():
            raise Canceled(f"{op} canceled before anything was written")
    try:
        arg = {k: o.describe("arg#" + k, v) for k, v in sorted((secrets or {}).items()) if v != ""}
        base = {"arg": arg} if arg else {}
        query = {"op": op, "args": args, "facts": dict(base), "attempt": 0, "round": 0}
        pending, host_failure = instantiate(engine.manifest.get("ops", {}).get(op, {}).get("prefetch", []), args), False
        for query["round"] in range(MAX_ROUNDS):
            facts = query["facts"]
            for n in pending:
                if n["key"] in facts or ("after" in n and facts.get(n["after"]) != "held"):
                    continue
                check()
                if n.get("commit") and not committed:  # from here the operation finishes under its own deadline
                    committed, cancel = True, threading.Event()
                    timer = threading.Timer(COMMIT_TIMEOUT_S, cancel.set)
                    timer.daemon = True
                    timer.start()
                facts[n["key"]] = fact = o.fetch(n, cancel)
                host_failure = host_failure or (isinstance(fact, dict) and "host_error" in fact)
            d = engine.decide(query)
            if d["status"] == "need":
                pending = d["needs"]
                continue
            if d["effects"]:
                check()
            failure, pending = o.apply(d["effects"], cancel), []
            if failure is None:
                return Outcome(d.get("result"), d.get("error"), query["round"], host_failure, o.refs.__getitem__)
            if isinstance(failure, Conflict):  # a precondition failed: decide again from fresh facts, keeping the locks held
                query["attempt"] += 1
                query["facts"] = {**base, **{k: v for k, v in facts.items() if v == "held"}}
            else:  # the core reports it, and decides that nothing more is applied
                host_failure, facts[f"apply@{query['attempt']}"] = True, {"host_error": failure.json}
        raise RuntimeError(f"driver: {op} asked more than {MAX_ROUNDS} questions")
    finally:
        o.end()


def instantiate(templates, args):
    """Turns prefetch templates into needs: {"$arg": name} becomes that string argument; a
    template whose argument is missing or not a string is dropped (the core asks for what it
    needs, or reports the usage error, in its first answer)."""
    def fill(t):
        name = t.get("$arg")
        if isinstance(name, str) and not isinstance(args.get(name), str):
            raise LookupError(name)
        return args[name] if isinstance(name, str) else t

    def need(t):
        try:
            return [json.loads(json.dumps(t), object_hook=fill)]
        except LookupError:
            return []
    return [n for t in templates for n in need(t)]
