package grantwire.remoteauth_test

import data.grantwire.fixtures_test as fx

# ---------------------------------------------------------------------------------------
# DPoP (RFC 9449): an authorization server that lists ES256

_jwk := {"kty": "EC", "crv": "P-256", "x": "eHg", "y": "eXk"}

_dpop_world := fx.patch(_world, {
	"as|0": fx.http(200, object.union(_as, {"dpop_signing_alg_values_supported": ["ES256", "RS256"]})),
	"dpopkey": {"key": fx.desc("dpopkey#key", "d0d0d0d0d0d0d0d0"), "jwk": _jwk, "jkt": "thumb"},
	"now@dpop": _now,
	"jti@exchange": {"value": fx.desc("jti@exchange#value", "1111111111111111")},
	"exchange": fx.http(200, fx.token_json("exchange", {
		"token_type": "DPoP",
		"refresh_token": fx.new_refresh("exchange", "7e7e0000000000aa"),
		"scope": "files:read offline_access",
	})),
})

_dw(p) := fx.patch(_dpop_world, p)

_nonce_answer := {
	"status": 400, "headers": {"content-type": "application/json", "dpop-nonce": "as-nonce-1"},
	"json": {"error": "use_dpop_nonce"},
}

test_dpop_key_clock_and_jti_before_the_exchange if {
	d := _d(_args, object.remove(_dpop_world, ["dpopkey", "now@dpop", "jti@exchange", "exchange", "lock", "now@lock", "remote@lock"]))
	[n.kind | some n in d.needs] == ["dpop.key", "clock.now", "entropy"]
	d.needs[0].alg == "ES256"
}

test_dpop_exchange_carries_a_proof if {
	d := _d(_args, object.remove(_dpop_world, ["exchange", "lock", "now@lock", "remote@lock"]))
	x := d.needs[0]
	x.key == "exchange"
	p := x.headers.DPoP["$jwt"]
	p.key == {"$ref": "dpopkey#key"}
	p.header == {"typ": "dpop+jwt", "jwk": _jwk}
	p.claims == {"jti": {"$ref": "jti@exchange#value"}, "htm": "POST", "htu": "https://auth.example.com/token", "iat": _now / 1000}
	p.algs == ["ES256"]
}

test_no_dpop_without_es256 if {
	d := _d(_args, object.remove(_world, ["exchange", "lock", "now@lock", "remote@lock"]))
	d.needs[0].key == "exchange"
	not d.needs[0].headers.DPoP
}

test_dpop_token_stored_with_its_key if {
	d := _d(_args, _dpop_world)
	d.status == "done"
	tok := d.effects[1].value
	tok.dpop_key == {"$ref": "dpopkey#key"}
	tok.dpop_jwk == _jwk
	tok.access_token == {"$ref": "exchange#access_token"}
}

test_bearer_answer_to_a_proof_is_stored_as_bearer if {
	d := _d(_args, _dw({"exchange": fx.http(200, fx.token_json("exchange", {"token_type": "Bearer"}))}))
	d.status == "done"
	not d.effects[1].value.dpop_key
	contains(_d(_args, _dw({"exchange": fx.http(200, fx.token_json("exchange", {"token_type": "mac"}))})).error.message, "neither a Bearer nor a DPoP")
}

test_dpop_nonce_one_retry if {
	f := object.remove(_dw({"exchange": _nonce_answer}), ["lock", "now@lock", "remote@lock"])
	d1 := _d(_args, f)
	[n.key | some n in d1.needs] == ["jti@nonce"]
	f2 := object.union(f, {"jti@nonce": {"value": fx.desc("jti@nonce#value", "2222222222222222")}})
	x := _d(_args, f2).needs[0]
	x.key == "exchange@nonce"
	x.commit == true
	x.headers.DPoP["$jwt"].claims.nonce == "as-nonce-1"
	x.headers.DPoP["$jwt"].claims.jti == {"$ref": "jti@nonce#value"}

	# a second use_dpop_nonce is the token endpoint's failure, not another retry
	f3 := object.union(f2, {"exchange@nonce": _nonce_answer})
	d3 := _d(_args, f3)
	d3.status == "done"
	d3.error

	# the retry's token is the one stored
	ok := fx.http(200, fx.token_json("exchange@nonce", {"token_type": "DPoP"}))
	d4 := _d(_args, object.union(_dw({"exchange": _nonce_answer}), {"jti@nonce": {"value": fx.desc("jti@nonce#value", "2222222222222222")}, "exchange@nonce": ok}))
	d4.effects[1].value.access_token == {"$ref": "exchange@nonce#access_token"}
	d4.effects[1].value.dpop_key == {"$ref": "dpopkey#key"}
}

test_nonce_without_the_header_is_no_retry if {
	bad := {"status": 400, "headers": {"content-type": "application/json"}, "json": {"error": "use_dpop_nonce"}}
	d := _d(_args, _dw({"exchange": bad}))
	d.status == "done"
	d.error
}
