package grantwire.step_test

import data.grantwire.step

test_shapes if {
	step.need([{"key": "a", "kind": "clock.now"}]) == {"status": "need", "needs": [{"key": "a", "kind": "clock.now"}]}
	step.done({"x": 1}, []) == {"status": "done", "result": {"x": 1}, "effects": []}
	step.fail({"code": "USAGE"}, [{"kind": "lock.release", "name": "p"}]) == {
		"status": "done", "error": {"code": "USAGE"},
		"effects": [{"kind": "lock.release", "name": "p"}],
	}
}

test_undo if {
	e := {"kind": "keyring.set", "user": "u", "value": "v"}
	step.undo(e, [{"kind": "keyring.delete", "user": "u"}]) == {
		"kind": "keyring.set", "user": "u", "value": "v",
		"undo": [{"kind": "keyring.delete", "user": "u"}],
	}
}
