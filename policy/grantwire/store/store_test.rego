package grantwire.store_test

import data.grantwire.fixtures_test as fx
import data.grantwire.store

# ---------------------------------------------------------------------------------------
# slots and needs

test_slots if {
	store.conn_user("google") == "google:default"
	store.client_user("google") == "provider:google"
	store.token_user("google") == "google:access_token"
	store.mcp_user("mcp-github", "GITHUB_TOKEN") == "mcp-github:GITHUB_TOKEN"
}

test_needs if {
	store.conn_need("conn", "google") == {"key": "conn", "kind": "keyring.get", "user": "google:default", "fields": ["refresh_token"], "fresh": true}
	store.token_need("token", "google") == {"key": "token", "kind": "keyring.get", "user": "google:access_token", "fields": ["access_token"], "fresh": false}
}

test_client_needs_read_the_slot_and_the_environment if {
	store.client_needs("client", "google", false) == [
		{"key": "client", "kind": "keyring.get", "user": "provider:google", "fields": ["client_id", "client_secret"], "fresh": false},
		{"key": "client@env_id", "kind": "env.get", "name": "GOOGLE_CLIENT_ID", "secret": true},
		{"key": "client@env_secret", "kind": "env.get", "name": "GOOGLE_CLIENT_SECRET", "secret": true},
	] with data.catalog as fx.catalog
	store.client_needs("c", "microsoft", true)[0].fresh == true with data.catalog as fx.catalog
}

test_env_names_default_to_grantwire_provider_suffix if {
	store.env_name("google", "client_id_env", "CLIENT_ID") == "GOOGLE_CLIENT_ID" with data.catalog as fx.catalog
	store.env_name("microsoft", "client_secret_env", "CLIENT_SECRET") == "GRANTWIRE_MICROSOFT_CLIENT_SECRET" with data.catalog as fx.catalog
	store.env_name("my-app.v2", "client_id_env", "CLIENT_ID") == "GRANTWIRE_MY_APP_V2_CLIENT_ID" with data.catalog as fx.catalog
	store.env_name("x", "client_id_env", "CLIENT_ID") == "GRANTWIRE_X_CLIENT_ID" with data.catalog as {"connectors": {"x": {"client_id_env": ""}}}
}

# ---------------------------------------------------------------------------------------
# numbers

test_ms_of_integers_and_decimal_text if {
	store.ms(1700000000) == 1700000000000
	store.ms(0) == 0
	store.ms({"$number": "1700000000"}) == 1700000000000
	store.ms({"$number": "1700000000.5"}) == 1700000000500
	store.ms({"$number": "1700000000.123"}) == 1700000000123
	store.ms({"$number": "1700000000.05"}) == 1700000000050
	store.ms({"$number": "1700000000.123999"}) == 1700000000123
	store.ms({"$number": "0.001"}) == 1
	store.ms({"$number": "1700000000.000000000000000001"}) == 1700000000000
}

test_ms_refuses_anything_else if {
	every x in [
		"1700000000", null, true, {"$number": 1700000000}, {"$number": ""}, {"$number": "1.2.3"},
		{"$number": "01.5"}, {"$number": ".5"}, {"$number": "1.x"}, {"$number": "x.5"}, {"$number": "+1.5"}, {"$number": "1234567890123456"},
		{"number": "1"},
	] {
		not store.ms(x)
	}
}

# "Decimal digits without a sign or an exponent" (policy bug: _digits compares
# json.marshal(to_number(s)) with s, and to_number keeps the text of "1e9" and "-1", so
# "1e9" is read as 10^12 ms, "1.5e3" as 6000 ms and "-1.5" as -500 ms; see the report).
test_ms_refuses_a_sign_or_an_exponent if {
	every x in [{"$number": "-1.5"}, {"$number": "-1"}, {"$number": "1e9"}, {"$number": "1.5e3"}, {"$number": "1E9"}] {
		not store.ms(x)
	}
}

test_seconds_round_trip if {
	store.seconds(1700000000500) == {"$number": "1700000000.500"}
	store.seconds(1700000000005) == {"$number": "1700000000.005"}
	store.seconds(1700000000050) == {"$number": "1700000000.050"}
	store.seconds(1700000000000) == {"$number": "1700000000.000"}
	store.seconds(5) == {"$number": "0.005"}
	every t in [0, 5, 999, 1000, 1700000000000, 1700000000001, 1700000000999, 9007199254740] {
		store.ms(store.seconds(t)) == t
	}
}

# ---------------------------------------------------------------------------------------
# the connection view

test_connection_valid if {
	store.connection(fx.conn("conn", fx.hash_a, ["openid", "gmail"])) == {
		"found": true, "valid": true,
		"account": "user@example.com", "scopes": ["openid", "gmail"],
		"connected_at": fx.connected_ms, "client_id_hash": fx.hash_a,
		"tenant": null, "account_type": null,
		"refresh": fx.desc("conn#refresh_token", fx.refresh_d),
		"version": "c1",
		"blob": fx.conn_json("conn", fx.hash_a, ["openid", "gmail"], fx.refresh_d),
	}
}

test_connection_with_tenant_account_type_and_float_seconds if {
	j := object.union(fx.conn_json("conn", fx.hash_a, [], fx.refresh_d), {
		"tenant": "contoso", "account_type": "work", "connected_at": {"$number": "1700000000.25"},
	})
	v := store.connection(fx.slot("conn", "c2", j))
	v.valid == true
	v.scopes == []
	v.tenant == "contoso"
	v.account_type == "work"
	v.connected_at == 1700000000250
	v.blob == j
}

test_connection_optional_members if {
	j := object.remove(fx.conn_json("conn", fx.hash_a, ["a"], fx.refresh_d), ["account_email", "client_id_hash"])
	v := store.connection(fx.slot("conn", "c1", object.union(j, {"tenant": 7, "account_type": null})))
	v.valid == true
	v.account == ""
	v.client_id_hash == null
	v.tenant == null
	v.account_type == null
}

test_connection_absent if {
	store.connection(fx.absent) == {"found": false}
	store.connection({"found": "yes"}) == {"found": false}
	store.connection({}) == {"found": false}
}

test_connection_invalid if {
	j := fx.conn_json("conn", fx.hash_a, ["a"], fx.refresh_d)
	invalid := {"found": true, "valid": false, "version": "c1"}
	every bad in [
		null, [], "x",
		object.remove(j, ["refresh_token"]),
		fx.patch(j, {"refresh_token": "plain"}),
		fx.patch(j, {"refresh_token": fx.empty("conn#refresh_token")}),
		fx.patch(j, {"scopes": "a b"}),
		fx.patch(j, {"scopes": ["a", 1]}),
		object.remove(j, ["scopes"]),
		object.remove(j, ["connected_at"]),
		fx.patch(j, {"connected_at": "1700000000"}),
		fx.patch(j, {"connected_at": {"$number": "x"}}),
	] {
		store.connection(fx.slot("conn", "c1", bad)) == invalid
	}
	store.connection(fx.not_json("conn", "c1")) == invalid
}

test_conn_blob if {
	store.conn_blob("a@b.c", ["x"], 1700000000500, fx.hash_a, null, null, fx.ref("r#refresh_token")) == {
		"account_email": "a@b.c", "client_id_hash": fx.hash_a,
		"connected_at": {"$number": "1700000000.500"},
		"refresh_token": {"$ref": "r#refresh_token"}, "scopes": ["x"],
	}
	b := store.conn_blob("", [], 1000, fx.hash_a, "contoso", "work", fx.ref("r"))
	b.tenant == "contoso"
	b.account_type == "work"
}

# ---------------------------------------------------------------------------------------
# the client view

test_client_from_the_keyring if {
	c := store.client(fx.client("client", fx.id_a), "client", "google") with data.catalog as fx.catalog
	c == {
		"found": true, "source": "keyring", "version": "k1",
		"client_id": fx.desc("client#client_id", fx.id_a), "client_id_hash": fx.hash_a,
		"client_secret": fx.desc("client#client_secret", "5ec5ec5ec5ec5ec5"),
		"has_secret": true, "tenant": null,
	}
}

test_client_tenant_stored_else_catalog if {
	j := object.union(fx.client_json("client", fx.id_a, true), {"tenant": "contoso"})
	f := fx.client_facts("client", fx.slot("client", "k1", j))
	store.client(f, "client", "microsoft").tenant == "contoso" with data.catalog as fx.catalog
	store.client(fx.client("client", fx.id_a), "client", "microsoft").tenant == "common" with data.catalog as fx.catalog
	store.catalog_tenant("microsoft") == "common" with data.catalog as fx.catalog
	store.catalog_tenant("google") == null with data.catalog as fx.catalog
}

# A client stored without a secret (a public client; configure_client stores
# "client_secret": "", which the host answers as the description of an empty secret) is a
# client without a secret.
test_client_from_the_keyring_without_a_secret if {
	f := fx.client_facts("client", fx.slot("client", "k1", fx.client_json("client", fx.id_a, false)))
	c := store.client(f, "client", "local") with data.catalog as fx.catalog
	c.found == true
	c.source == "keyring"
	c.has_secret == false
	c.client_secret == null
	j := {"client_id": fx.desc("client#client_id", fx.id_a)}
	store.client(fx.client_facts("client", fx.slot("client", "k1", j)), "client", "local").has_secret == false with data.catalog as fx.catalog
}

test_client_from_the_environment if {
	c := store.client(fx.env_client("client", fx.id_b, true), "client", "microsoft") with data.catalog as fx.catalog
	c == {
		"found": true, "source": "env", "version": "env:bbbb0002",
		"client_id": fx.desc("client@env_id#value", fx.id_b), "client_id_hash": fx.hash_b,
		"client_secret": fx.desc("client@env_secret#value", "5ec5ec5ec5ec5ec5"),
		"has_secret": true, "tenant": "common",
	}
	p := store.client(fx.env_client("client", fx.id_b, false), "client", "local") with data.catalog as fx.catalog
	p.has_secret == false
	p.client_secret == null
}

test_client_empty_environment_secret_is_no_secret if {
	f := fx.patch(fx.env_client("client", fx.id_b, false), {"client@env_secret": {"found": true, "value": fx.empty("client@env_secret#value")}})
	c := store.client(f, "client", "local") with data.catalog as fx.catalog
	c.has_secret == false
	c.client_secret == null
}

test_the_keyring_wins_over_the_environment if {
	f := object.union(fx.env_client("client", fx.id_b, true), {"client": fx.slot("client", "k1", fx.client_json("client", fx.id_a, true))})
	c := store.client(f, "client", "google") with data.catalog as fx.catalog
	c.source == "keyring"
	c.client_id_hash == fx.hash_a
}

test_no_client if {
	store.client(fx.no_client("client"), "client", "google") == {"found": false} with data.catalog as fx.catalog

	# a slot that is not a client, an empty client id, an empty variable
	store.client(fx.client_facts("client", fx.not_json("client", "k1")), "client", "google") == {"found": false} with data.catalog as fx.catalog
	j := {"client_id": fx.empty("client#client_id"), "client_secret": fx.empty("client#client_secret")}
	store.client(fx.client_facts("client", fx.slot("client", "k1", j)), "client", "google") == {"found": false} with data.catalog as fx.catalog
	f := fx.patch(fx.no_client("client"), {"client@env_id": {"found": true, "value": fx.empty("client@env_id#value")}})
	store.client(f, "client", "google") == {"found": false} with data.catalog as fx.catalog
}

test_client_read if {
	store.client_read(fx.no_client("client"), "client")
	not store.client_read(object.remove(fx.no_client("client"), ["client@env_secret"]), "client")
	not store.client_read({}, "client")
}

test_expectations if {
	store.client_expect(fx.client("client", fx.id_a), "client") == {"version": "k1"}
	store.client_expect(fx.no_client("client"), "client") == {"found": false}
	store.slot_expect(fx.slot("k", "v7", {})) == {"version": "v7"}
	store.slot_expect(fx.absent) == {"found": false}
	store.restore("k", "u", fx.slot("k", "v7", {})) == [{"kind": "keyring.set", "user": "u", "value": {"$ref": "k#value"}}]
	store.restore("k", "u", fx.absent) == [{"kind": "keyring.delete", "user": "u"}]
}

# ---------------------------------------------------------------------------------------
# the access token view

_conn := store.connection(fx.conn("conn", fx.hash_a, ["a"]))

test_token_bound_and_valid if {
	store.token(fx.token("token", fx.hash_a, 2000000), _conn, 1000000, 60000) == {
		"token": fx.desc("token#access_token", "acce55acce55acce"), "expires_at": 2000000,
	}
}

test_token_refused if {
	# expiring within the margin, expired, another client, another connection
	not store.token(fx.token("token", fx.hash_a, 1060000), _conn, 1000000, 60000)
	not store.token(fx.token("token", fx.hash_a, 999), _conn, 1000000, 60000)
	not store.token(fx.token("token", fx.hash_b, 2000000), _conn, 1000000, 60000)
	t := fx.token("token", fx.hash_a, 2000000)
	not store.token(fx.patch(t, {"json": fx.patch(t.json, {"connected_at": 1})}), _conn, 1000000, 60000)
	not store.token(fx.patch(t, {"json": fx.patch(t.json, {"access_token": fx.empty("token#access_token")})}), _conn, 1000000, 60000)
	not store.token(fx.patch(t, {"json": fx.patch(t.json, {"expires_at": "2000000"})}), _conn, 1000000, 60000)
	not store.token(fx.not_json("token", "t1"), _conn, 1000000, 60000)
	not store.token(fx.absent, _conn, 1000000, 60000)
	store.token(t, _conn, 1000000, 60000)
	store.token(t, _conn, 1939999, 60000)
	not store.token(t, _conn, 1940000, 60000)
}

test_token_effects if {
	store.put_token("google", fx.ref("r#access_token"), 5000, fx.hash_a, 1000) == {
		"kind": "keyring.set", "user": "google:access_token",
		"value": {"access_token": {"$ref": "r#access_token"}, "expires_at": 5000, "client_id_hash": fx.hash_a, "connected_at": 1000},
	}
	store.drop_token("google") == {"kind": "keyring.delete", "user": "google:access_token"}
}

# ---------------------------------------------------------------------------------------
# ledgers

test_ledger_helpers if {
	store.expect(fx.entry(fx.grants_file, ["google", "a"], ["x"])) == {"value": ["x"]}
	store.expect(fx.no_entry(fx.grants_file, ["google", "a"])) == {"exists": false}
	store.expect(fx.no_file(fx.grants_file, ["google", "a"])) == {"exists": false}
	store.write("f.json", [{"path": ["a"], "value": 1}]) == {"kind": "ledger.write", "ledger": "f.json", "ops": [{"path": ["a"], "value": 1}]}
	store.state_entry("a@b.c", ["x"], 5, fx.hash_a, null) == {
		"configured": true, "account": "a@b.c", "scopes": ["x"],
		"connected_at": 5, "client_id_hash": fx.hash_a, "tenant": null,
	}
	store.mcp_key({"mcpServers": {}}) == "mcpServers"
	store.mcp_key({}) == "mcpServers"
	store.mcp_key({"servers": {"x": {}}}) == "servers"
	store.mcp_key({"servers": {}, "mcpServers": {}}) == "mcpServers"
}

test_problem_of_a_container_that_is_not_an_object if {
	f := {"ledger": fx.grants_file, "path": ["google", "builtin:chat"], "file": fx.path_of(fx.grants_file), "found": true, "version": "l1", "exists": false}
	store.problem(object.union(f, {"shape": ["object", "array"]})) == "it holds an array where an object belongs"
	store.problem(object.union(f, {"shape": ["string"]})) == "it holds a string where an object belongs"
	store.problem(object.union(f, {"shape": ["object", "null"]})) == "it holds a null where an object belongs"
	not store.problem(object.union(f, {"shape": ["object", "object"]}))

	# the value's own type is judged by the ledger's shape
	store.problem(fx.patch(fx.entry(fx.grants_file, ["google", "a"], "x"), {"shape": ["object", "object", "string"]})) == "it does not have the shape of that ledger"
	store.ledger_name("connectors/grants.json") == "grants"
	store.ledger_name("mcp_servers.json") == "mcp_servers"
}

test_problem_of_a_corrupt_file if {
	store.problem(fx.corrupt(fx.grants_file, [], "invalid JSON at byte 3")) == "invalid JSON at byte 3"
}

_shape := "it does not have the shape of that ledger"

test_usable_ledger_facts_have_no_problem if {
	every fact in [
		fx.no_file(fx.grants_file, []),
		fx.no_entry(fx.grants_file, ["google", "a"]),
		fx.entry(fx.grants_file, [], {}),
		fx.entry(fx.grants_file, [], {"google": {"a": ["x"], "b": []}, "mcp-github": {}}),
		fx.entry(fx.grants_file, ["google"], {"a": ["x"]}),
		fx.entry(fx.grants_file, ["google", "a"], ["x", "y"]),
		fx.entry(fx.grants_file, ["google", "a"], []),
		fx.entry(fx.activations_file, [], {"version": 1, "activations": {"m": {"a": true}}, "extra": 1}),
		fx.entry(fx.activations_file, [], {"version": 2}),
		fx.entry(fx.activations_file, ["activations"], {"m": {"a": true, "b": false}}),
		fx.entry(fx.activations_file, ["activations", "m"], {"a": true}),
		fx.entry(fx.activations_file, ["activations", "m", "a"], false),
		fx.entry(fx.activations_file, [], {"version": 1, "activations": {"m": {"a": true}}, "tools": {"m": {"a": ["read", "list"]}}}),
		fx.entry(fx.activations_file, ["tools"], {"m": {"a": []}}),
		fx.entry(fx.activations_file, ["tools", "m"], {"a": ["read"]}),
		fx.entry(fx.activations_file, ["tools", "m", "a"], ["read"]),
		fx.entry(fx.state_file, [], {"google": {"configured": true}}),
		fx.entry(fx.state_file, ["google"], {"configured": true}),
		fx.entry(fx.mcp_file, [], {"mcpServers": {"m": {"command": "x"}}}),
		fx.entry(fx.mcp_file, [], {"servers": {"m": {}}}),
		fx.entry(fx.mcp_file, [], {}),
		fx.entry(fx.mcp_file, ["mcpServers"], {"m": {}}),
		fx.entry(fx.mcp_file, ["mcpServers", "m"], {"command": "x"}),
		fx.entry(fx.agents_file, [], "anything: the registry judges it"),
	] {
		not store.problem(fact)
	}
}

test_misshapen_ledger_entries if {
	every fact in [
		fx.entry(fx.grants_file, [], []),
		fx.entry(fx.grants_file, [], {"google": []}),
		fx.entry(fx.grants_file, [], {"google": {"a": "x"}}),
		fx.entry(fx.grants_file, ["google"], {"a": [1]}),
		fx.entry(fx.grants_file, ["google"], "x"),
		fx.entry(fx.grants_file, ["google", "a"], "x"),
		fx.entry(fx.grants_file, ["google", "a"], [null]),
		fx.entry(fx.activations_file, [], []),
		fx.entry(fx.activations_file, [], {"activations": []}),
		fx.entry(fx.activations_file, [], {"activations": {"m": {"a": "yes"}}}),
		fx.entry(fx.activations_file, ["activations"], {"m": []}),
		fx.entry(fx.activations_file, ["activations", "m"], {"a": 1}),
		fx.entry(fx.activations_file, [], {"tools": {"m": {"a": true}}}),
		fx.entry(fx.activations_file, [], {"tools": []}),
		fx.entry(fx.activations_file, ["tools"], {"m": {"a": [1]}}),
		fx.entry(fx.activations_file, ["tools", "m"], {"a": true}),
		fx.entry(fx.activations_file, ["tools", "m", "a"], true),
		fx.entry(fx.activations_file, ["activations", "m", "a"], "true"),
		fx.entry(fx.state_file, [], {"google": "x"}),
		fx.entry(fx.state_file, [], []),
		fx.entry(fx.state_file, ["google"], "x"),
		fx.entry(fx.mcp_file, [], []),
		fx.entry(fx.mcp_file, [], {"mcpServers": {"m": "x"}}),
		fx.entry(fx.mcp_file, [], {"mcpServers": []}),
		fx.entry(fx.mcp_file, ["mcpServers"], {"m": 1}),
		fx.entry(fx.mcp_file, ["mcpServers", "m"], "x"),
	] {
		store.problem(fact) == _shape
	}
}

test_configure_client_cmd if {
	store.configure_client_cmd("google") == "grantwire configure google --client-id <id> --client-secret-stdin" with data.catalog as fx.catalog
	store.configure_client_cmd("microsoft") == "grantwire configure microsoft --client-id <id>" with data.catalog as fx.catalog
}
