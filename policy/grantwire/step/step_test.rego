package grantwire.step_test

import data.grantwire.step

test_need if {
	step.need([{"key": "now", "kind": "clock.now"}]) == {"status": "need", "needs": [{"key": "now", "kind": "clock.now"}]}
}

test_done if {
	step.done({"ok": true}, [{"kind": "token.delete", "provider": "google"}]) == {
		"status": "done", "result": {"ok": true},
		"effects": [{"kind": "token.delete", "provider": "google"}],
	}
}

test_fail if {
	step.fail({"code": "BUSY"}, []) == {"status": "done", "error": {"code": "BUSY"}, "effects": []}
}

test_tx_marks_every_effect if {
	step.tx([{"kind": "client.put"}, {"kind": "connection.put", "tx": false}]) == [
		{"kind": "client.put", "tx": true},
		{"kind": "connection.put", "tx": true},
	]
	step.tx([]) == []
}
