package grantwire.tripwire_test

import data.grantwire.tripwire

_conn(h, tenant) := {"found": true, "valid": true, "client_id_hash": h, "tenant": tenant}

_client(h, tenant) := {"found": true, "client_id_hash": h, "tenant": tenant}

test_ok if {
	tripwire.verdict(_conn("aaaa0001", null), _client("aaaa0001", null)) == "ok"
	tripwire.verdict(_conn("aaaa0001", "contoso"), _client("aaaa0001", "contoso")) == "ok"

	# only one side names a tenant: no mismatch
	tripwire.verdict(_conn("aaaa0001", null), _client("aaaa0001", "contoso")) == "ok"
	tripwire.verdict(_conn("aaaa0001", "contoso"), _client("aaaa0001", null)) == "ok"
	tripwire.verdict(object.remove(_conn("aaaa0001", null), ["tenant"]), object.remove(_client("aaaa0001", null), ["tenant"])) == "ok"
}

test_corrupt_first if {
	tripwire.verdict({"found": true, "valid": false, "version": "v"}, _client("aaaa0001", null)) == "corrupt"
	tripwire.verdict({"found": true, "valid": false}, {"found": false}) == "corrupt"
	tripwire.verdict({"found": true}, _client("aaaa0001", null)) == "corrupt"
	tripwire.verdict({}, _client("aaaa0001", null)) == "corrupt"
}

test_no_client if {
	tripwire.verdict(_conn("aaaa0001", null), {"found": false}) == "no_client"
	tripwire.verdict(_conn("aaaa0001", null), {}) == "no_client"
}

test_client_mismatch if {
	tripwire.verdict(_conn("aaaa0001", null), _client("bbbb0002", null)) == "client"

	# a missing hash matches nothing, even another missing hash
	tripwire.verdict(_conn(null, null), _client("aaaa0001", null)) == "client"
	tripwire.verdict(_conn(null, null), _client(null, null)) == "client"
	tripwire.verdict(object.remove(_conn("x", null), ["client_id_hash"]), object.remove(_client("x", null), ["client_id_hash"])) == "client"
	tripwire.verdict(_conn(1, null), _client(1, null)) == "client"

	# the client is judged before the tenant
	tripwire.verdict(_conn("aaaa0001", "a"), _client("bbbb0002", "b")) == "client"
}

test_tenant_mismatch if {
	tripwire.verdict(_conn("aaaa0001", "contoso"), _client("aaaa0001", "fabrikam")) == "tenant"
	tripwire.verdict(_conn("aaaa0001", "Contoso"), _client("aaaa0001", "contoso")) == "tenant"
}

test_verdict_sets if {
	tripwire.resolvable == {"client", "tenant", "no_client"}
	tripwire.clearing == {"corrupt", "client", "tenant"}
	every v in tripwire.clearing | tripwire.resolvable {
		is_string(tripwire.reason[v])
	}
	tripwire.reason.client == "client_rotated"
	tripwire.reason.tenant == "tenant_mismatch"
	tripwire.reason.ok == "ok"
	not "no_client" in tripwire.clearing
	not "corrupt" in tripwire.resolvable
}
