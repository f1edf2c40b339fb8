package grantwire.remoteauth_test

import data.grantwire.fixtures_test as fx

# ---------------------------------------------------------------------------------------
# machine grants (issue 21 §1): no loopback, the pre-registered client, one token request

_machine_doc(grant, extra) := {"version": 1, "servers": {_c: object.union({"url": "https://mcp.example.com/mcp", "grant": grant}, extra)}}

_mpre(extra) := fx.slot("prereg", "p1", object.union(
	{"client_id": fx.desc("prereg#client_id", fx.id_b), "issuer": null, "source": "preregistered"},
	extra,
))

_msecret := {"client_secret": fx.desc("prereg#client_secret", "5ec5ec5ec5ec5ec5")}

_mkey := {"private_key": fx.desc("prereg#private_key", "4e94e94e94e94e94")}

_massertion := {"assertion": fx.desc("prereg#assertion", "a55e47a55e47a55e")}

_mas(extra) := fx.http(200, object.union(_as, extra))

# A world with the grant configured: the interactive facts removed.
_mworld(grant, extra, pre) := object.union(
	object.remove(_world, ["loopback", "dcr", "verifier", "state", "callback"]),
	{
		"mcp_remote": fx.entry("mcp_remote.json", [], _machine_doc(grant, extra)),
		"prereg": _mpre(pre),
		"now@grant": _now,
	},
)

_mneed(w) := _d(_args, object.remove(w, ["exchange", "lock", "now@lock", "remote@lock"])).needs[0]

test_client_credentials_with_a_secret if {
	w := _mworld("client_credentials", {}, _msecret)

	# no loopback is opened: the first needs after the local ones are the probe's
	keys := [n.key | some n in _d(_args, object.remove(w, ["probe", "prm|0", "as|0", "exchange"])).needs]
	keys == ["probe"]
	x := _mneed(w)
	x.key == "exchange"
	x.commit == true
	x.form.grant_type == "client_credentials"
	x.form.resource == "https://mcp.example.com/mcp"

	# no refresh token is asked for: the grant is made again when the token expires
	x.form.scope == "files:read"
	[r["$ref"] | some r in x.headers.Authorization["$basic"]] == ["prereg#client_id", "prereg#client_secret"]
	not x.form.client_assertion
	d := _d(_args, w)
	d.status == "done"
	d.result.registration == "preregistered"
	fx.kinds(d) == ["keyring.set", "ledger.write", "event.emit"]
	d.effects[0].value.client == "preregistered"
}

test_client_credentials_with_a_private_key if {
	w := _mworld("client_credentials", {}, _mkey)
	[n.key | some n in _d(_args, object.remove(w, ["now@grant", "exchange"])).needs] == ["now@grant", "jti"]
	w2 := object.union(w, {"jti": {"value": fx.desc("jti#value", "7e7e7e7e7e7e7e7e")}})
	x := _mneed(w2)
	x.form.client_assertion_type == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	j := x.form.client_assertion["$jwt"]
	j.key == {"$ref": "prereg#private_key"}
	j.claims.iss == {"$ref": "prereg#client_id"}
	j.claims.sub == {"$ref": "prereg#client_id"}
	j.claims.aud == _iss
	j.claims.iat == _now / 1000
	j.claims.exp == (_now / 1000) + 300
	j.claims.jti == {"$ref": "jti#value"}
	j.algs == ["ES256", "RS256"]
	not x.headers.Authorization

	# the algorithms the server lists
	w3 := object.union(w2, {"as|0": _mas({"token_endpoint_auth_methods_supported": ["private_key_jwt"], "token_endpoint_auth_signing_alg_values_supported": ["ES256"]})})
	_mneed(w3).form.client_assertion["$jwt"].algs == ["ES256"]

	# a server that takes only secrets: the key is not used
	w4 := object.union(w2, {"as|0": _mas({"token_endpoint_auth_methods_supported": ["client_secret_basic"]})})
	not _mneed(w4).form.client_assertion
}

test_jwt_bearer_sends_the_workloads_jwt if {
	w := object.union(_mworld("jwt_bearer", {}, _massertion), {"as|0": _mas({"token_endpoint_auth_methods_supported": ["none"]})})
	x := _mneed(w)
	x.form.grant_type == "urn:ietf:params:oauth:grant-type:jwt-bearer"
	x.form.assertion == {"$ref": "prereg#assertion"}
	x.form.client_id["$ref"] == "prereg#client_id"
	_d(_args, w).status == "done"
}

test_jwt_bearer_refused_is_reported_not_retried if {
	w := object.union(_mworld("jwt_bearer", {}, _massertion), {"exchange": fx.http(400, {"error": "invalid_grant"})})
	d := _d(_args, w)
	d.error.oauth_error == "invalid_grant"
	not d.needs
	d.effects == []
}

test_id_jag_exchanges_the_id_token_first if {
	idp := {"idp": {"token_endpoint": "https://idp.example.com/token", "client_id": "idp-client"}}
	w := _mworld("id_jag", idp, object.union(_msecret, _massertion))
	t := _d(_args, object.remove(w, ["exchange"])).needs[0]
	t.key == "idjag"
	t.url == "https://idp.example.com/token"
	t.form.grant_type == "urn:ietf:params:oauth:grant-type:token-exchange"
	t.form.requested_token_type == "urn:ietf:params:oauth:token-type:id-jag"
	t.form.subject_token == {"$ref": "prereg#assertion"}
	t.form.subject_token_type == "urn:ietf:params:oauth:token-type:id_token"
	t.form.audience == _iss
	t.form.resource == "https://mcp.example.com/mcp"
	t.form.client_id == "idp-client"
	jag := fx.http(200, {"access_token": fx.desc("idjag#access_token", "1d1a61d1a61d1a6a"), "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"})
	w2 := object.union(w, {"idjag": jag})
	x := _mneed(w2)
	x.form.grant_type == "urn:ietf:params:oauth:grant-type:jwt-bearer"
	x.form.assertion == {"$ref": "idjag#access_token"}
	[r["$ref"] | some r in x.headers.Authorization["$basic"]] == ["prereg#client_id", "prereg#client_secret"]
	_d(_args, w2).status == "done"

	# without the identity provider's client id, none is sent
	w3 := object.union(_mworld("id_jag", {"idp": {"token_endpoint": "https://idp.example.com/token"}}, _massertion), {"idjag": jag})
	not _d(_args, object.remove(w3, ["idjag", "exchange"])).needs[0].form.client_id
}

test_id_jag_exchange_refusals if {
	idp := {"idp": {"token_endpoint": "https://idp.example.com/token"}}
	w := _mworld("id_jag", idp, _massertion)
	cases := [
		[{"status": 0, "error": "refused"}, "could not be reached"],
		[fx.http(400, {"error": "invalid_grant"}), "refused the token exchange (invalid_grant)"],
		[fx.http(500, {}), "with status 500"],
		[fx.http(200, {"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}), "with no access_token"],
		[fx.http(200, {"access_token": fx.desc("idjag#access_token", "1d1a61d1a61d1a6a"), "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}), "is not an ID-JAG"],
	]
	every c in cases {
		d := _d(_args, object.union(w, {"idjag": c[0]}))
		d.error.code == "PROVIDER_ERROR"
		contains(d.error.message, c[1])
		d.effects == []
	}
}

test_machine_grant_needs_the_preregistered_client if {
	w := object.union(_mworld("client_credentials", {}, {}), {"prereg": fx.absent})
	d := _d(_args, w)
	_code(d) == "CONFIGURATION"
	contains(d.error.fix, "--grant client-credentials")
}

test_machine_grant_the_server_does_not_list if {
	w := object.union(_mworld("client_credentials", {}, _msecret), {"as|0": _mas({"grant_types_supported": ["authorization_code"]})})
	d := _d(_args, w)
	_code(d) == "CONFIGURATION"
	contains(d.error.message, "does not list the client_credentials grant")

	# listed: it goes on
	w2 := object.union(w, {"as|0": _mas({"grant_types_supported": ["client_credentials"]})})
	_mneed(w2).form.grant_type == "client_credentials"
}

test_machine_grant_without_authorization_endpoint if {
	w := object.union(_mworld("client_credentials", {}, _msecret), {"as|0": _mas({"grant_types_supported": ["client_credentials"]})})
	_d(_args, w).status == "done"
}

test_an_unknown_grant_is_the_browsers if {
	w := _mworld("password", {"idp": {"token_endpoint": "https://idp.example.com/token"}}, _msecret)
	[n.kind | some n in _d(_args, object.remove(w, ["probe"])).needs] == ["loopback.open"]
}
