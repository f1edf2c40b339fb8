package grantwire.dpop_test

import data.grantwire.dpop

test_supported if {
	dpop.supported({"dpop_signing_alg_values_supported": ["RS256", "ES256"]})
	not dpop.supported({"dpop_signing_alg_values_supported": ["RS256"]})
	not dpop.supported({"dpop_signing_alg_values_supported": "ES256"})
	not dpop.supported({})
}

test_htu_drops_query_and_fragment if {
	dpop.htu("https://as.example.com/token?x=1#f") == "https://as.example.com/token"
	dpop.htu("https://as.example.com/token#f") == "https://as.example.com/token"
	dpop.htu("https://as.example.com/token") == "https://as.example.com/token"
}

test_proof_members if {
	p := dpop.proof({"$ref": "k#key", "digest": "x"}, {"kty": "EC"}, {"$ref": "j#value"}, "POST", "https://rs.example.com/mcp?a", 1800000000999, "n", {"$ref": "t#access_token"})
	p["$jwt"].claims == {
		"jti": {"$ref": "j#value"}, "htm": "POST", "htu": "https://rs.example.com/mcp", "iat": 1800000000,
		"nonce": "n", "ath": {"$s256": {"$ref": "t#access_token"}},
	}
	p["$jwt"].key == {"$ref": "k#key"}
	q := dpop.proof({"$ref": "k#key"}, {}, {"$ref": "j#value"}, "POST", "u", 0, "", null)
	not q["$jwt"].claims.nonce
	not q["$jwt"].claims.ath
}

test_nonce if {
	dpop.nonce({"headers": {"dpop-nonce": "n1"}, "json": {"error": "use_dpop_nonce"}}) == "n1"
	dpop.nonce({"headers": {"dpop-nonce": "n2", "www-authenticate": `DPoP error="use_dpop_nonce"`}, "json": null}) == "n2"
	not dpop.nonce({"headers": {"dpop-nonce": "n3"}, "json": {"error": "invalid_grant"}})
	not dpop.nonce({"headers": {}, "json": {"error": "use_dpop_nonce"}})
	not dpop.nonce({"headers": {"dpop-nonce": ""}, "json": {"error": "use_dpop_nonce"}})
}

test_token_type if {
	dpop.token_type({"token_type": "DPoP"}) == "DPoP"
	dpop.token_type({"token_type": "bearer"}) == "Bearer"
	dpop.token_type({}) == "Bearer"
	not dpop.token_type({"token_type": "mac"})
}
