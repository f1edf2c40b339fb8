package grantwire.tripwire_test

import data.grantwire.fixtures_test as fx
import data.grantwire.tripwire

_conn := fx.conn(fx.hash_a)

_client := fx.client(fx.hash_a)

test_ok if {
	tripwire.verdict(_conn, _client) == "ok"
}

test_corrupt_comes_first if {
	tripwire.verdict(fx.corrupt, _client) == "corrupt"
	tripwire.verdict(fx.corrupt, fx.absent) == "corrupt"
}

test_no_client if {
	tripwire.verdict(_conn, fx.absent) == "no_client"
}

test_client_rotated if {
	tripwire.verdict(_conn, fx.client(fx.hash_b)) == "client"
}

test_missing_stored_hash_mismatches if {
	tripwire.verdict(object.remove(_conn, ["client_id_hash"]), _client) == "client"
	tripwire.verdict(fx.set(_conn, "client_id_hash", ""), _client) == "client"
}

test_tenant if {
	tripwire.verdict(fx.set(_conn, "tenant", "t1"), fx.set(_client, "tenant", "t2")) == "tenant"
	tripwire.verdict(fx.set(_conn, "tenant", "t1"), fx.set(_client, "tenant", "t1")) == "ok"
}

test_tenant_is_checked_only_when_both_sides_name_one if {
	tripwire.verdict(fx.set(_conn, "tenant", "t1"), _client) == "ok"
	tripwire.verdict(_conn, fx.set(_client, "tenant", "t2")) == "ok"
	tripwire.verdict(fx.set(_conn, "tenant", "t1"), object.remove(_client, ["tenant"])) == "ok"
}

test_client_is_checked_before_tenant if {
	tripwire.verdict(fx.set(_conn, "tenant", "t1"), fx.patch(fx.client(fx.hash_b), {"tenant": "t2"})) == "client"
}

test_fails_closed_on_malformed_facts if {
	tripwire.verdict(object.remove(_conn, ["valid"]), _client) == "corrupt"
	tripwire.verdict(fx.set(_conn, "valid", "yes"), _client) == "corrupt"
	tripwire.verdict("blob", _client) == "corrupt"
	tripwire.verdict(_conn, object.remove(_client, ["found"])) == "no_client"
	tripwire.verdict(_conn, "client") == "no_client"
	tripwire.verdict(_conn, object.remove(_client, ["client_id_hash"])) == "client"
	tripwire.verdict(object.remove(_conn, ["client_id_hash"]), object.remove(_client, ["client_id_hash"])) == "client"
	tripwire.verdict(fx.set(_conn, "client_id_hash", null), fx.set(_client, "client_id_hash", null)) == "client"
}

test_verdict_sets if {
	tripwire.resolvable == {"client", "tenant", "no_client"}
	tripwire.clearing == {"corrupt", "client", "tenant"}
	object.keys(tripwire.reason) == {"corrupt", "client", "tenant", "no_client", "ok"}
	tripwire.reason.client == "client_rotated"
	tripwire.reason.tenant == "tenant_mismatch"
}
