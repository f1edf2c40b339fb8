package node_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// nodeJWT runs jwt.mjs's signJWT on Node: the token, or the error's message.
func nodeJWT(t *testing.T, keyPEM string, algs []string) (string, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv(requireNode) == "1" {
			t.Fatalf("%s=1 but node is not on PATH", requireNode)
		}
		t.Skip("node is not on PATH")
	}
	in, _ := json.Marshal(map[string]any{"key": keyPEM, "algs": algs,
		"header": map[string]any{"typ": "JWT"}, "claims": map[string]any{"iss": "c", "aud": "https://as.example", "exp": 1800000300}})
	const script = `import { signJWT } from "./jwt.mjs";
let s = ""; for await (const c of process.stdin) s += c;
const a = JSON.parse(s);
try { process.stdout.write(JSON.stringify({ token: signJWT(a.key, a.header, a.claims, a.algs) })); }
catch (e) { process.stdout.write(JSON.stringify({ error: e.message })); }`
	cmd := exec.Command(node, "--input-type=module", "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var r struct{ Token, Error string }
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node printed %q", out)
	}
	return r.Token, r.Error
}

func pkcs8PEM(t *testing.T, k any) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// The Node shell's "$jwt" (hostabi/README.md) signs as the Go host does: ES256, ES384,
// ES512 (r||s) and RS256 verified with Go's crypto, the header's typ kept; an algorithm not
// in algs is refused, and no error quotes the key.
func TestNodeSignsJWT(t *testing.T) {
	split := func(tok string) (map[string]any, []byte, []byte) {
		p := strings.Split(tok, ".")
		if len(p) != 3 {
			t.Fatalf("not a JWS: %q", tok)
		}
		hb, _ := base64.RawURLEncoding.DecodeString(p[0])
		var h map[string]any
		if err := json.Unmarshal(hb, &h); err != nil {
			t.Fatal(err)
		}
		sig, _ := base64.RawURLEncoding.DecodeString(p[2])
		return h, []byte(p[0] + "." + p[1]), sig
	}
	for _, c := range []struct {
		alg   string
		curve elliptic.Curve
		hash  crypto.Hash
	}{{"ES256", elliptic.P256(), crypto.SHA256}, {"ES384", elliptic.P384(), crypto.SHA384}, {"ES512", elliptic.P521(), crypto.SHA512}} {
		k, _ := ecdsa.GenerateKey(c.curve, rand.Reader)
		sec1, _ := x509.MarshalECPrivateKey(k)
		for _, p := range []string{pkcs8PEM(t, k), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))} {
			tok, msg := nodeJWT(t, p, []string{c.alg})
			if msg != "" {
				t.Fatalf("%s: %s", c.alg, msg)
			}
			h, input, sig := split(tok)
			if h["alg"] != c.alg || h["typ"] != "JWT" {
				t.Errorf("%s: header %v", c.alg, h)
			}
			var d []byte
			switch c.hash {
			case crypto.SHA256:
				s := sha256.Sum256(input)
				d = s[:]
			case crypto.SHA384:
				s := sha512.Sum384(input)
				d = s[:]
			default:
				s := sha512.Sum512(input)
				d = s[:]
			}
			n := len(sig) / 2
			if !ecdsa.Verify(&k.PublicKey, d, new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])) {
				t.Errorf("%s: the signature does not verify", c.alg)
			}
		}
	}
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	tok, msg := nodeJWT(t, pkcs8PEM(t, rk), nil)
	if msg != "" {
		t.Fatal(msg)
	}
	h, input, sig := split(tok)
	d := sha256.Sum256(input)
	if h["alg"] != "RS256" || rsa.VerifyPKCS1v15(&rk.PublicKey, crypto.SHA256, d[:], sig) != nil {
		t.Errorf("RS256: %v does not verify", h)
	}

	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := pkcs8PEM(t, k)
	body := strings.Split(p, "\n")[1]
	for name, c := range map[string]struct {
		key  string
		algs []string
		want string
	}{
		"refused alg": {p, []string{"RS256"}, "signs ES256"},
		"not PEM":     {body, nil, "not PEM"},
		"broken":      {strings.Replace(p, body, body[:20]+"AAAA"+body[24:], 1)[:len(p)/2] + "\n-----END PRIVATE KEY-----\n", nil, "not PKCS #8"},
	} {
		_, msg := nodeJWT(t, c.key, c.algs)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want %q", name, msg, c.want)
		}
		if strings.Contains(msg, body[:16]) || strings.Contains(msg, body[len(body)-16:]) {
			t.Errorf("%s: the error quotes the key: %q", name, msg)
		}
	}
}
