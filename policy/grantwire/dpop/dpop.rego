# METADATA
# title: DPoP (RFC 9449, SEP-1932)
# description: |
#   The rules of sender-constrained tokens for remote MCP servers, shared by mcp_auth and
#   mcp_token. DPoP is used when the authorization server's metadata lists ES256 in
#   dpop_signing_alg_values_supported (RFC 9449 §5.1): the host creates a P-256 key for
#   the authorization (need dpop.key; the key is stored only in the credential store,
#   inside the server's token slot, so it goes wherever the tokens go), and signs a fresh
#   proof for every token request and every request to the server (a $jwt template: the
#   policy names jti from an entropy fact, iat from a clock fact, htm, htu, the nonce and
#   the access token whose hash is ath; the host signs). A use_dpop_nonce challenge (400 from the token
#   endpoint, 401 from the server, with a DPoP-Nonce header) is answered with one more
#   proof carrying that nonce, a bounded number of times.
package grantwire.dpop

# METADATA
# title: signing algorithm
# description: The one DPoP signing algorithm grantwire's hosts sign with (ECDSA P-256, SHA-256).
alg := "ES256"

# METADATA
# title: nonce retries
# description: |
#   How many times one request is sent again with a server-supplied nonce (RFC 9449 §8,
#   §9): a server that asks for a new nonce more often is refused.
max_nonce_retries := 1

# METADATA
# title: supported
# description: The authorization server's metadata document lists grantwire's DPoP algorithm.
supported(doc) if {
	is_array(doc.dpop_signing_alg_values_supported)
	alg in doc.dpop_signing_alg_values_supported
}

# METADATA
# title: key need
# description: |
#   A fresh DPoP key pair (need dpop.key): the fact holds the private key's description
#   (key), the public JWK (jwk) and its thumbprint (jkt).
key_need(k) := {"key": k, "kind": "dpop.key", "alg": alg}

# METADATA
# title: proof
# description: |
#   A DPoP proof (RFC 9449 §4.2) as a $jwt template the host signs with the private key
#   (a secret reference): header typ dpop+jwt and the public jwk; claims jti (a secret
#   reference to an entropy fact), htm, htu (the URL without query and fragment), iat (Unix
#   seconds of a clock fact), the server's nonce ("" for none) and, for a request to the
#   server, ath: the SHA-256 of the access token (a secret reference; null at the token
#   endpoint).
proof(key, jwk, jti, htm, url, now_ms, nonce, token) := {"$jwt": {
	"key": {"$ref": key["$ref"]},
	"header": {"typ": "dpop+jwt", "jwk": jwk},
	"claims": object.union(
		{"jti": {"$ref": jti["$ref"]}, "htm": htm, "htu": htu(url), "iat": floor(now_ms / 1000)},
		object.union(_nonce_param(nonce), _ath_param(token)),
	),
	"algs": [alg],
}}

_nonce_param(n) := {"nonce": n} if {
	is_string(n)
	n != ""
} else := {}

_ath_param(t) := {"ath": {"$s256": {"$ref": t["$ref"]}}} if is_object(t)

else := {}

# METADATA
# title: htu
# description: |
#   The proof's htu: the request URL without its query and fragment (RFC 9449 §4.2).
htu(url) := split(split(url, "#")[0], "?")[0]

# METADATA
# title: nonce challenge
# description: |
#   The nonce an HTTP response asks the next proof to carry: a use_dpop_nonce error (a
#   token endpoint's JSON error, a server's WWW-Authenticate) with a DPoP-Nonce header.
nonce(resp) := n if {
	n := resp.headers["dpop-nonce"]
	is_string(n)
	n != ""
	count(n) <= 512
	_asks_nonce(resp)
}

_asks_nonce(resp) if resp.json.error == "use_dpop_nonce"

_asks_nonce(resp) if contains(object.get(resp.headers, "www-authenticate", ""), "use_dpop_nonce")

# METADATA
# title: token type
# description: |
#   How a token response's token_type is read when a proof was sent: "DPoP" (bound to the
#   key), "Bearer" (the server did not bind it: sent as a bearer token), else undefined.
token_type(j) := "DPoP" if {
	lower(object.get(j, "token_type", "")) == "dpop"
} else := "Bearer" if {
	not j.token_type
} else := "Bearer" if {
	lower(j.token_type) == "bearer"
}
