"""The "$jwt" template (hostabi/README.md) signs as the Go host does (host/jwt_test.go): ES256,
ES384, ES512 (r||s) and RS256, verified with the cryptography package; an algorithm the server
does not accept is refused, and no error quotes the key."""

import base64
import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

from grantwire._host import sign_jwt


def _pem(k, fmt=serialization.PrivateFormat.PKCS8):
    return k.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()).decode()


def _split(tok):
    h, c, s = tok.split(".")
    dec = lambda p: base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))  # noqa: E731
    return json.loads(dec(h)), json.loads(dec(c)), (h + "." + c).encode(), dec(s)


@pytest.mark.parametrize("curve,alg,h", [(ec.SECP256R1(), "ES256", hashes.SHA256()), (ec.SECP384R1(), "ES384", hashes.SHA384()),
                                         (ec.SECP521R1(), "ES512", hashes.SHA512())])
def test_ec_keys_sign_their_algorithm(curve, alg, h):
    k = ec.generate_private_key(curve)
    for pem in (_pem(k), _pem(k, serialization.PrivateFormat.TraditionalOpenSSL)):
        header, claims, data, sig = _split(sign_jwt(pem, {"typ": "JWT", "alg": "none"}, {"iss": "c", "exp": 1800000300}, [alg]))
        assert header == {"typ": "JWT", "alg": alg} and claims == {"iss": "c", "exp": 1800000300}
        n = len(sig) // 2
        k.public_key().verify(utils.encode_dss_signature(int.from_bytes(sig[:n], "big"), int.from_bytes(sig[n:], "big")), data, ec.ECDSA(h))


def test_rsa_key_signs_rs256():
    k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    header, _, data, sig = _split(sign_jwt(_pem(k), {}, {"iss": "c"}, []))
    assert header == {"alg": "RS256"}
    k.public_key().verify(sig, data, padding.PKCS1v15(), hashes.SHA256())


def test_refusals_never_quote_the_key():
    pem = _pem(ec.generate_private_key(ec.SECP256R1()))
    body = pem.splitlines()[1]
    for key, algs, want in ((pem, ["RS256"], "signs ES256"), (body, [], "not PEM"),
                            (pem[: len(pem) // 2] + "\n-----END PRIVATE KEY-----\n", [], "not PEM")):
        with pytest.raises(ValueError) as e:
            sign_jwt(key, {}, {}, algs)
        assert want in str(e.value)
        assert body[:16] not in str(e.value) and body[-16:] not in str(e.value)
