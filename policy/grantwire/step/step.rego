# METADATA
# title: Decision shapes
# description: |
#   Every decision of grantwire's core is one of two shapes. A **need** lists facts the
#   shell must gather before the core can decide; the shell fetches them in order and asks
#   again. A **done** carries either a result or an error, plus the effects the shell must
#   apply (each with its precondition). Nothing else ever leaves the core.
package grantwire.step

# METADATA
# title: need
# description: Ask the shell for the listed facts, fetched in order (a busy lock stops the round).
need(needs) := {"status": "need", "needs": needs}

# METADATA
# title: done
# description: Finish the operation with a result and the effects to apply.
done(result, effects) := {"status": "done", "result": result, "effects": effects}

# METADATA
# title: fail
# description: Finish the operation with an error and the effects to apply (often none).
fail(err, effects) := {"status": "done", "error": err, "effects": effects}

# METADATA
# title: undo
# description: |
#   Attach the effects that undo an effect. Consecutive effects that carry undo form a
#   transaction: when one of them fails, the host applies the undo of those before it, in
#   reverse order (hostabi/README.md).
undo(effect, effects) := object.union(effect, {"undo": effects})
