package main_test

// End to end for the machine grants of remote MCP servers (issue 21 §1; README: Machine
// grants): the built binary, the private Secret Service, internal/testworld/authserver
// taking the client credentials grant (client_secret_basic, private_key_jwt), the JWT
// bearer grant and, as an identity provider, the token exchange of an ID token for an
// ID-JAG, and an MCP Go SDK server behind it (internal/testworld/mcptest). Each grant:
// mcp add with the form a user types, mcp auth with no browser and no person, a tools
// call through mcp proxy (whose mcp_token hands it the access token), and the client
// secret, the private key, the assertion and the ID token searched for in every output,
// every file under the home and the decision log.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gokeyring "github.com/zalando/go-keyring"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// machineWorld is a remoteWorld whose commands write a decision log under the home (the
// leak search reads it with every other file).
func machineWorld(t *testing.T, cfg authserver.Config) (*e2e, string) {
	t.Helper()
	cfg.NoRegistration = true
	w, srv := remoteWorld(t, cfg, []string{"notes:read"})
	w.useDecisionLog()
	return w, srv.URL
}

// secretFile writes a secret outside the home (the leak search reads every file there).
func secretFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// ecKeyPEM is a new P-256 key and its PKCS #8 PEM; the PEM's body lines are planted.
func ecKeyPEM(t *testing.T, w *e2e) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	p := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	lines := strings.Split(strings.TrimSpace(p), "\n")
	w.plant(lines[1 : len(lines)-1]...)
	return k, p
}

// signed is a JWT the test's key signs, planted whole and by its signature.
func signed(t *testing.T, w *e2e, k *ecdsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	now := time.Now().Unix()
	claims["iat"], claims["exp"], claims["jti"] = now, now+3600, randHex(8)
	tok, err := authserver.SignJWT(k, "JWT", claims)
	require.NoError(t, err)
	w.plant(tok, tok[strings.LastIndex(tok, ".")+1:])
	return tok
}

// authorizedMachine runs mcp auth (no browser, no stdin) and a tools call through the
// proxy, and checks nothing was authorized in a browser.
func authorizedMachine(t *testing.T, w *e2e, name, grant string) {
	t.Helper()
	r := w.gw("", "mcp", "auth", name)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Authorized "+name+" at "+w.srv.URL())
	require.Contains(t, r.stdout, "the "+grant+" grant runs again with grantwire mcp auth "+name)
	require.NotContains(t, r.stderr, "refresh token", "no refresh token is expected of a machine grant")
	st := w.srv.Stats()
	require.Zero(t, st.Authorizations, "no authorization in a browser")
	require.Equal(t, 1, st.MachineGrants)
	require.Empty(t, w.keyring(name+":mcp_client"), "no registration")

	require.Equal(t, 0, w.gw("", "activations", "activate", name, "builtin:chat").code)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, _ := w.proxySession(ctx, name, "builtin:chat")
	out, err := echo(t, ctx, session, "machine "+grant)
	require.NoError(t, err)
	require.Equal(t, "machine "+grant, out)
	require.Equal(t, 1, w.srv.Stats().MachineGrants, "the proxy used the stored token")

	w.requireDecisionsOf("mcp_add", "mcp_auth", "mcp_token")
}

func TestE2ERemoteMCPMachineGrants(t *testing.T) {
	t.Run("client-credentials-secret", func(t *testing.T) {
		const clientID, secret = "ci-bot", "cc-secret-7d21c9e04b"
		w, url := machineWorld(t, authserver.Config{ClientID: clientID, ClientSecret: secret,
			ClientAuth: authserver.AuthBasic, ClientCredentials: true})
		r := w.gw(secret+"\n", "mcp", "add", "builds", "--url", url, "--grant", "client-credentials",
			"--client-id", clientID, "--issuer", w.srv.URL(), "--client-secret-stdin")
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "authorized with the client-credentials grant")
		authorizedMachine(t, w, "builds", "client-credentials")
		require.Equal(t, []string{authserver.AuthBasic}, w.srv.ClientAuthSeen())

		// mcp auth again (what an expired access token needs): the grant runs again.
		r = w.gw("", "mcp", "auth", "builds")
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, 2, w.srv.Stats().MachineGrants)
	})

	t.Run("client-credentials-private-key", func(t *testing.T) {
		const clientID = "ci-signer"
		w, url := machineWorld(t, authserver.Config{ClientID: clientID, ClientCredentials: true})
		k, keyPEM := ecKeyPEM(t, w)
		w.srv.Configure(func(c *authserver.Config) { c.ClientKey = &k.PublicKey })
		r := w.gw("", "mcp", "add", "builds", "--url", url, "--grant", "client-credentials",
			"--client-id", clientID, "--issuer", w.srv.URL(), "--private-key-file", secretFile(t, "ci.pem", keyPEM))
		require.Equal(t, 0, r.code, r.stderr)
		authorizedMachine(t, w, "builds", "client-credentials")
		require.Equal(t, []string{authserver.AuthPrivateKeyJWT}, w.srv.ClientAuthSeen())
	})

	t.Run("jwt-bearer", func(t *testing.T) {
		const clientID = "deployer"
		w, url := machineWorld(t, authserver.Config{ClientID: clientID})
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		w.srv.Configure(func(c *authserver.Config) { c.AssertionKey = &k.PublicKey })
		jwt := signed(t, w, k, map[string]any{"iss": "https://workload.example", "sub": "deploy-job", "aud": w.srv.URL()})
		r := w.gw("", "mcp", "add", "deploy", "--url", url, "--grant", "jwt-bearer",
			"--client-id", clientID, "--issuer", w.srv.URL(), "--assertion-file", secretFile(t, "token", jwt+"\n"))
		require.Equal(t, 0, r.code, r.stderr)
		authorizedMachine(t, w, "deploy", "jwt-bearer")
		require.Equal(t, 1, w.srv.Stats().JWTBearerGrants)
	})

	t.Run("id-jag", func(t *testing.T) {
		const clientID, idpClient = "wiki-agent", "grantwire-at-idp"
		w, url := machineWorld(t, authserver.Config{ClientID: clientID, IDPClientID: idpClient})
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		w.srv.Configure(func(c *authserver.Config) { c.AssertionKey = &k.PublicKey })
		idToken := signed(t, w, k, map[string]any{"iss": w.srv.URL() + "/idp", "sub": "alice", "aud": idpClient})
		r := w.gw(idToken+"\n", "mcp", "add", "wiki", "--url", url, "--grant", "id-jag",
			"--client-id", clientID, "--issuer", w.srv.URL(),
			"--idp-token-endpoint", w.srv.IDPTokenURL(), "--idp-client-id", idpClient, "--assertion-stdin")
		require.Equal(t, 0, r.code, r.stderr)
		authorizedMachine(t, w, "wiki", "id-jag")
		st := w.srv.Stats()
		require.Equal(t, 1, st.TokenExchanges)
		require.Equal(t, 1, st.JWTBearerGrants)
	})

	t.Run("refusals", func(t *testing.T) {
		w, url := machineWorld(t, authserver.Config{ClientID: "x", ClientCredentials: true})
		_, keyPEM := ecKeyPEM(t, w)
		keyFile := secretFile(t, "k.pem", keyPEM)
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--grant", "password", "--client-id", "x"}, `"password" is not one of`},
			{[]string{"--grant", "client-credentials"}, "needs --client-id"},
			{[]string{"--grant", "client-credentials", "--client-id", "x"}, "needs the client's secret or private key"},
			{[]string{"--grant", "jwt-bearer", "--client-id", "x"}, "needs the assertion"},
			{[]string{"--private-key-file", keyFile}, "a private key goes with a machine grant"},
			{[]string{"--grant", "id-jag", "--client-id", "x", "--assertion-file", secretFile(t, "a", "eyJhbGciOiJFUzI1NiJ9.e30.c2ln\n")}, "--idp-token-endpoint"},
			{[]string{"--assertion", "eyJ.x.y"}, "secrets are never taken from arguments"},
			{[]string{"--private-key", "k"}, "use --private-key-file"},
			{[]string{"--client-secret-stdin", "--assertion-stdin", "--client-id", "x"}, "stdin holds one secret"},
			{[]string{"--grant", "client-credentials", "--client-id", "x", "--private-key-file", secretFile(t, "nokey", "not a key\n")}, "is not a PEM private key"},
		} {
			r := w.gw("", append([]string{"mcp", "add", "m", "--url", url}, c.args...)...)
			require.Contains(t, []int{2, 3}, r.code, "%v: a usage or configuration error: %s", c.args, r.stderr)
			require.Contains(t, r.stderr, c.want, "%v", c.args)
		}
		require.Zero(t, w.srv.Stats().TokenRequests)
	})

	t.Run("help", func(t *testing.T) {
		w := newBB(t)
		r := w.run("", "mcp", "add", "--help")
		require.Equal(t, 0, r.code)
		for _, g := range []string{"--grant client-credentials", "--private-key-file", "--grant jwt-bearer", "--grant id-jag --client-id"} {
			require.Contains(t, r.stdout, g)
		}
	})
}

// deletePrereg deletes a remote server's pre-registered client from the credential store
// (a keyring that lost it).
func (w *e2e) deletePrereg(name string) {
	w.t.Helper()
	require.NoError(w.t, gokeyring.Delete(w.service, name+":mcp_preregistered"))
}
