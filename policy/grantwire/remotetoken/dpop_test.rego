package grantwire.remotetoken_test

import data.grantwire.fixtures_test as fx

# ---------------------------------------------------------------------------------------
# DPoP-bound tokens (RFC 9449): stored with their key, handed out with it, refreshed with
# a proof

_jwk := {"kty": "EC", "crv": "P-256", "x": "eHg", "y": "eXk"}

_dblob(k, expires_at) := _blob(k, expires_at, {"dpop_key": fx.desc(concat("", [k, "#dpop_key"]), "d0d0d0d0d0d0d0d0"), "dpop_jwk": _jwk})

_dpop_world := fx.patch(_world, {
	"token": fx.slot("token", "t1", _dblob("token", _now)),
	"token@lock": fx.slot("token@lock", "t1", _dblob("token@lock", _now)),
	"jti@refresh": {"value": fx.desc("jti@refresh#value", "1111111111111111")},
	"refresh": fx.http(200, fx.token_json("refresh", {"token_type": "DPoP", "refresh_token": fx.new_refresh("refresh", "9e9e9e9e9e9e9e9e")})),
})

_dw(p) := fx.patch(_dpop_world, p)

_nonce_answer := {
	"status": 400, "headers": {"content-type": "application/json", "dpop-nonce": "as-nonce-2"},
	"json": {"error": "use_dpop_nonce"},
}

test_a_valid_dpop_token_is_handed_out_with_its_key if {
	d := _d(_args, _dw({"token": fx.slot("token", "t1", _dblob("token", _now + 3600000))}))
	d.status == "done"
	d.result.token_type == "DPoP"
	d.result.dpop_key == {"$ref": "token#dpop_key"}
	d.result.dpop_jwk == _jwk
	d.result.dpop_nonce_retries == 1

	b := _d(_args, _with({"token": _tok("token", _now + 3600000)}))
	b.result.token_type == "Bearer"
	not b.result.dpop_key
}

test_dpop_refresh_carries_a_proof if {
	d := _d(_args, object.remove(_dpop_world, ["jti@refresh", "refresh"]))
	[n.key | some n in d.needs] == ["jti@refresh"]
	x := _d(_args, object.remove(_dpop_world, ["refresh"])).needs[0]
	x.key == "refresh"
	p := x.headers.DPoP["$jwt"]
	p.key == {"$ref": "token@lock#dpop_key"}
	p.header.jwk == _jwk
	p.claims == {"jti": {"$ref": "jti@refresh#value"}, "htm": "POST", "htu": "https://auth.example.com/token", "iat": _now / 1000}

	# a bearer token's refresh has no proof
	not _d(_args, object.remove(_world, ["refresh"])).needs[0].headers.DPoP
}

test_dpop_refresh_saves_the_key if {
	d := _d(_args, _dpop_world)
	d.status == "done"
	d.result.token_type == "DPoP"
	d.result.dpop_key == {"$ref": "token@lock#dpop_key"}
	d.effects[0].value.dpop_key == {"$ref": "token@lock#dpop_key"}
	d.effects[0].value.dpop_jwk == _jwk

	# the server answered a bearer token: stored and handed out without the key
	b := _d(_args, _dw({"refresh": fx.http(200, fx.token_json("refresh", {"token_type": "Bearer"}))}))
	b.result.token_type == "Bearer"
	not b.effects[0].value.dpop_key
}

test_dpop_refresh_nonce_one_retry if {
	f := _dw({"refresh": _nonce_answer})
	[n.key | some n in _d(_args, f).needs] == ["jti@nonce"]
	f2 := object.union(f, {"jti@nonce": {"value": fx.desc("jti@nonce#value", "2222222222222222")}})
	x := _d(_args, f2).needs[0]
	x.key == "refresh@nonce"
	x.headers.DPoP["$jwt"].claims.nonce == "as-nonce-2"
	ok := fx.http(200, fx.token_json("refresh@nonce", {"token_type": "DPoP"}))
	d := _d(_args, object.union(f2, {"refresh@nonce": ok}))
	d.result.access_token == {"$ref": "refresh@nonce#access_token"}
	e := _d(_args, object.union(f2, {"refresh@nonce": _nonce_answer}))
	e.status == "done"
	e.error
}

# A pre-registered client's refresh authenticates as its authorization did (the token
# slot's auth_method; the client's slot does not say).
test_preregistered_refresh_authenticates_as_the_authorization if {
	pre := fx.slot("prereg@lock", "p1", {
		"client_id": fx.desc("prereg@lock#client_id", fx.id_b),
		"client_secret": fx.desc("prereg@lock#client_secret", "5ec5ec5ec5ec5ec5"),
		"issuer": null, "source": "preregistered",
	})
	basic := _d(_args, object.remove(_with({"prereg@lock": pre, "token@lock": _ptok("client_secret_basic")}), ["refresh"])).needs[0]
	basic.headers.Authorization["$basic"][1]["$ref"] == "prereg@lock#client_secret"
	post := _d(_args, object.remove(_with({"prereg@lock": pre, "token@lock": _ptok("client_secret_post")}), ["refresh"])).needs[0]
	post.form.client_secret["$ref"] == "prereg@lock#client_secret"
	d := _d(_args, _with({"prereg@lock": pre, "token@lock": _ptok("client_secret_post")}))
	d.effects[0].value.auth_method == "client_secret_post"
}

_ptok(m) := fx.slot("token@lock", "t1", _blob("token@lock", _now, {"client": "preregistered", "client_id_hash": fx.hash_b, "auth_method": m}))
