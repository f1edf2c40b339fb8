package rt

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"strings"

	"github.com/gobwas/glob"
)

// Digests are pure functions of their argument, so they may appear in a policy (the
// capabilities decide whether they do).

func (ev *Eval) digest(a *V, h func() hash.Hash) *V {
	s, ok := Str(a)
	if !ok {
		return nil
	}
	d := h()
	d.Write([]byte(s))
	return ev.String(hex.EncodeToString(d.Sum(nil)))
}

//rego:builtin crypto.md5
func (ev *Eval) BiCryptoMD5(a *V) *V { return ev.digest(a, md5.New) }

//rego:builtin crypto.sha1
func (ev *Eval) BiCryptoSHA1(a *V) *V { return ev.digest(a, sha1.New) }

//rego:builtin crypto.sha256
func (ev *Eval) BiCryptoSHA256(a *V) *V { return ev.digest(a, sha256.New) }

func (ev *Eval) hmac(a, b *V, h func() hash.Hash) *V {
	msg, key, ok := strs2(a, b)
	if !ok {
		return nil
	}
	m := hmac.New(h, []byte(key))
	m.Write([]byte(msg))
	return ev.String(hex.EncodeToString(m.Sum(nil)))
}

//rego:builtin crypto.hmac.md5
func (ev *Eval) BiHMACMD5(a, b *V) *V { return ev.hmac(a, b, md5.New) }

//rego:builtin crypto.hmac.sha1
func (ev *Eval) BiHMACSHA1(a, b *V) *V { return ev.hmac(a, b, sha1.New) }

//rego:builtin crypto.hmac.sha256
func (ev *Eval) BiHMACSHA256(a, b *V) *V { return ev.hmac(a, b, sha256.New) }

//rego:builtin crypto.hmac.sha512
func (ev *Eval) BiHMACSHA512(a, b *V) *V { return ev.hmac(a, b, sha512.New) }

//rego:builtin crypto.hmac.equal
func (ev *Eval) BiHMACEqual(x, y string) *V {
	return Bool(hmac.Equal([]byte(x), []byte(y)))
}

//rego:builtin glob.quote_meta
func (ev *Eval) BiGlobQuoteMeta(s string) *V {
	return ev.String(glob.QuoteMeta(s))
}

// verifyHS is io.jwt.verify_hs256 and friends: whether the token's signature is the HMAC
// of its header and payload under the secret (its parts are not decoded otherwise).
func (ev *Eval) verifyHS(token, secret *V, h func() hash.Hash) *V {
	t, key, ok := strs2(token, secret)
	if !ok {
		return nil
	}
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return nil
	}
	sig := ev.BiBase64URLDecode(parts[2])
	if sig == nil {
		return nil
	}
	m := hmac.New(h, []byte(key))
	m.Write([]byte(parts[0] + "." + parts[1]))
	return Bool(hmac.Equal([]byte(sig.s), m.Sum(nil)))
}

//rego:builtin io.jwt.verify_hs256
func (ev *Eval) BiJWTVerifyHS256(token, secret *V) *V { return ev.verifyHS(token, secret, sha256.New) }

//rego:builtin io.jwt.verify_hs384
func (ev *Eval) BiJWTVerifyHS384(token, secret *V) *V {
	return ev.verifyHS(token, secret, sha512.New384)
}

//rego:builtin io.jwt.verify_hs512
func (ev *Eval) BiJWTVerifyHS512(token, secret *V) *V { return ev.verifyHS(token, secret, sha512.New) }
