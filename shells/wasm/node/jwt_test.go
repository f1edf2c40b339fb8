package node_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
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
// ES512 (r||s) and RS256 verified with Go's crypto (authserver.VerifyJWS), the header's
// typ kept; an algorithm not in algs is refused, and no error quotes the key.
func TestNodeSignsJWT(t *testing.T) {
	for _, c := range []struct {
		alg   string
		curve elliptic.Curve
	}{{"ES256", elliptic.P256()}, {"ES384", elliptic.P384()}, {"ES512", elliptic.P521()}} {
		k, _ := ecdsa.GenerateKey(c.curve, rand.Reader)
		sec1, _ := x509.MarshalECPrivateKey(k)
		for _, p := range []string{pkcs8PEM(t, k), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))} {
			tok, msg := nodeJWT(t, p, []string{c.alg})
			if msg != "" {
				t.Fatalf("%s: %s", c.alg, msg)
			}
			h, _, err := authserver.VerifyJWS(tok, &k.PublicKey)
			if err != nil {
				t.Errorf("%s: %v", c.alg, err)
			} else if h["typ"] != "JWT" {
				t.Errorf("%s: header %v", c.alg, h)
			}
		}
	}
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	tok, msg := nodeJWT(t, pkcs8PEM(t, rk), nil)
	if msg != "" {
		t.Fatal(msg)
	}
	if _, _, err := authserver.VerifyJWS(tok, &rk.PublicKey); err != nil {
		t.Errorf("RS256: %v", err)
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
