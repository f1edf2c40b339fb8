// The "$jwt" template (hostabi/README.md; host/jwt.go in Go): a JWT signed with a PEM
// private key (PKCS #8, SEC 1 EC or PKCS #1 RSA) under the key's algorithm (ES256, ES384,
// ES512 on P-256, P-384, P-521; RS256 on RSA), which must be among algs when algs is not
// empty. Header members beside alg are kept. Errors never carry the key.

import { createPrivateKey, sign } from "node:crypto";
import { encode } from "./json.mjs";

const EC = { "prime256v1": ["ES256", "sha256"], "secp384r1": ["ES384", "sha384"], "secp521r1": ["ES512", "sha512"] };

// keyOf parses the PEM key; what node:crypto throws (which may quote the input) is dropped.
function keyOf(pem) {
  if (typeof pem !== "string" || !pem.includes("-----BEGIN ")) throw new Error("host: the private key is not PEM");
  let key;
  try {
    key = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new Error("host: the private key is not PKCS #8, SEC 1 or PKCS #1");
  }
  if (key.asymmetricKeyType === "rsa") return { key, alg: "RS256", hash: "sha256", ec: false };
  const ec = key.asymmetricKeyType === "ec" && EC[key.asymmetricKeyDetails?.namedCurve];
  if (!ec) throw new Error("host: the private key is neither EC (P-256, P-384, P-521) nor RSA");
  return { key, alg: ec[0], hash: ec[1], ec: true };
}

const b64url = (s) => Buffer.from(s).toString("base64url");

// signJWT answers the compact JWS of claims (an object; raw numbers written as they are).
export function signJWT(pem, header, claims, algs) {
  algs = algs ?? [];
  const { key, alg, hash, ec } = keyOf(pem);
  if (algs.length > 0 && !algs.includes(alg)) {
    throw new Error(`host: the private key signs ${alg}, and the server accepts only ${algs.join(" ")}`);
  }
  const input = `${b64url(encode({ ...(header ?? {}), alg }))}.${b64url(encode(claims))}`;
  const sig = sign(hash, Buffer.from(input), ec ? { key, dsaEncoding: "ieee-p1363" } : key);
  return `${input}.${sig.toString("base64url")}`;
}
