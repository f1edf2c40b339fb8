package main_test

import (
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	gokeyring "github.com/zalando/go-keyring"

	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/authserver"
	"github.com/grantwire/grantwire/internal/testworld/pgtest"
)

// homeSnapshot is what a home holds: its ledger files' bytes and its keyring values.
func homeSnapshot(t *testing.T, dir, service string, users []string) (map[string]string, map[string]string) {
	t.Helper()
	files, secrets := map[string]string{}, map[string]string{}
	for _, name := range []string{layout.Grants, layout.Activations, layout.State, layout.MCPServers, layout.Agents, "mcp_remote.json"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			files[name] = string(b)
		}
	}
	for _, u := range users {
		if v, err := gokeyring.Get(service, u); err == nil {
			secrets[u] = v
		}
	}
	return files, secrets
}

func pgDumpText(t *testing.T, db string) string {
	t.Helper()
	out, err := exec.Command("pg_dump", "--no-owner", db).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// TestStoreCopyBothWays: a home configured by the CLI (an OAuth client, a connection, an
// MCP server's key, grants) goes to PostgreSQL with `store copy` and comes back into an
// empty home and keyring byte for byte, on the real Secret Service and the real
// PostgreSQL; no secret is in the dump, the output, or any file on the way; a copy that
// would overwrite other values copies nothing; the wrong key is refused with the fix.
func TestStoreCopyBothWays(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	db := pgtest.Database(t, "./cmd/grantwire")
	w.plant(pgtest.Password(db))
	key := filepath.Join(w.home, "store.key")
	r := w.gw("", "store", "new-key", key)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "wrote the key k")
	w.env = append(w.env, "GRANTWIRE_STORE_KEY_FILE="+key)

	clientSecret, refresh, apiKey := "client-secret-PLANTED-"+randHex(4), "refresh-PLANTED-"+randHex(4), "brave-PLANTED-"+randHex(4)
	w.plant(refresh, apiKey)
	w.configureClient("123.apps.googleusercontent.com", clientSecret)
	require.NoError(t, gokeyring.Set(w.service, "google:default", layout.Connection{AccountEmail: "user@example.com",
		ClientIDHash: layout.ClientIDHash("123.apps.googleusercontent.com"), ConnectedAt: 1790000000123, RefreshToken: refresh,
		Scopes: []string{gmailRead}}.Encode()))
	r = w.gw("BRAVE_API_KEY="+apiKey+"\n", "configure", "mcp-brave-search", "--from-stdin")
	require.Equal(t, 0, r.code, r.stderr)
	w.gwJSON("", 0, nil, "grants", "grant", "google", "builtin:email", "--scopes", gmailRead)

	home := filepath.Join(w.home, ".grantwire")
	users := []string{"google:default", "provider:google", "mcp-brave-search:BRAVE_API_KEY"}
	files, secrets := homeSnapshot(t, home, w.service, users)
	require.Len(t, secrets, 3)
	require.Contains(t, files, layout.Grants)
	require.Contains(t, files, layout.MCPServers)

	r = w.gw("", "store", "copy", "--from", home, "--to", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "secrets (keyring service "+w.service+")")
	require.Contains(t, r.stdout, " 3 secrets")
	dump := pgDumpText(t, db)
	require.Contains(t, dump, "mcp-brave-search:BRAVE_API_KEY")
	for _, s := range []string{clientSecret, refresh, apiKey} {
		require.NotContains(t, dump, s, "the dump shows a secret")
	}
	r = w.gw("", "store", "copy", "--from", home, "--to", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "copied 0 ledgers and 0 secrets", "a second copy finds everything there")

	// Back, into an empty home and an empty keyring service.
	require.NoError(t, gokeyring.DeleteAll(w.service))
	require.NoError(t, os.RemoveAll(home))
	r = w.gw("", "store", "copy", "--from", db, "--to", home)
	require.Equal(t, 0, r.code, r.stderr)
	files2, secrets2 := homeSnapshot(t, home, w.service, users)
	require.Equal(t, files, files2, "the ledgers came back byte for byte")
	require.Equal(t, secrets, secrets2, "the secrets came back")
	var status struct {
		Connections []struct {
			Provider  string `json:"provider"`
			Connected bool   `json:"connected"`
		} `json:"connections"`
	}
	w.gwJSON("", 0, &status, "status")

	// Another value at the destination: nothing is copied without --replace.
	require.NoError(t, gokeyring.Set(w.service, "mcp-brave-search:BRAVE_API_KEY", "changed-PLANTED-"+randHex(4)))
	r = w.gw("", "store", "copy", "--from", db, "--to", home)
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "already holds other values")
	require.Contains(t, r.stderr, "--replace")
	r = w.gw("", "store", "copy", "--from", db, "--to", home, "--replace")
	require.Equal(t, 0, r.code, r.stderr)
	_, secrets3 := homeSnapshot(t, home, w.service, users)
	require.Equal(t, secrets, secrets3)

	// The wrong key: refused, with the fix.
	other := filepath.Join(w.home, "other.key")
	require.Equal(t, 0, w.gw("", "store", "new-key", other).code)
	r = w.gw("", "store", "copy", "--from", db, "--to", home, "--key-file", other)
	require.Equal(t, 5, r.code)
	require.Contains(t, r.stderr, "does not hold")
	require.Contains(t, r.stderr, "put the store's key in "+other)
	require.NotContains(t, r.stderr, "fix:", "no command fixes a wrong key")
	r = w.gw("", "store", "new-key", other)
	require.Equal(t, 2, r.code, "new-key never replaces a key")
}

// TestStoreCopyGAIAHome: a GAIA installation's home (~/.gaia) and its keyring service,
// with a value large enough for GAIA's chunked layout, goes to the store under its own
// home name and comes back into an empty ~/.gaia unchanged.
func TestStoreCopyGAIAHome(t *testing.T) {
	w := newE2E(t, authserver.Config{})
	db := pgtest.Database(t, "./cmd/grantwire")
	key := filepath.Join(w.home, "store.key")
	require.Equal(t, 0, w.gw("", "store", "new-key", key).code)
	gaia, service := filepath.Join(w.home, ".gaia"), "gaia.connections.test."+randHex(4)
	t.Cleanup(func() { _ = gokeyring.DeleteAll(service) })
	refresh := "gaia-refresh-PLANTED-" + randHex(4) + strings.Repeat("x", 3000) // GAIA chunks it
	apiKey := "gaia-key-PLANTED-" + randHex(4)
	w.plant(refresh[:30], apiKey)
	require.NoError(t, os.MkdirAll(filepath.Join(gaia, "connectors"), 0o700))
	ledgers := map[string]string{
		layout.Grants: `{"microsoft":{"builtin:email":["Mail.Read"]}}` + "\n",
		layout.State:  `{"microsoft":{"account":"u@example.com","configured":true,"connected_at":1790000000000,"scopes":["Mail.Read"]}}` + "\n",
		layout.MCPServers: `{"mcpServers":{"mcp-tavily":{"args":[],"command":"tavily-mcp","env":{"TAVILY_API_KEY":{"$keyring":"` +
			service + `:mcp-tavily:TAVILY_API_KEY"}}}}}` + "\n",
	}
	for name, doc := range ledgers {
		require.NoError(t, os.WriteFile(filepath.Join(gaia, name), []byte(doc), 0o600))
	}
	require.NoError(t, os.Chmod(filepath.Join(gaia, "connectors"), 0o700))
	// GAIA writes the connection through its chunked layout; grantwire's shell reads it.
	blob := `{"account_email":"u@example.com","client_id_hash":"0a1b2c3d","connected_at":1790000000.0,"refresh_token":"` + refresh + `","scopes":["Mail.Read"]}`
	require.NoError(t, gokeyring.Set(service, "mcp-tavily:TAVILY_API_KEY", apiKey))
	setChunked(t, service, "microsoft:default", blob)

	env := append([]string(nil), w.env...)
	w.env = append(w.env, "GRANTWIRE_STORE_KEY_FILE="+key)
	defer func() { w.env = env }()
	r := w.gw("", "--keyring-service", service, "store", "copy", "--from", gaia, "--to", db, "--store-home", "gaia")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "copied 3 ledgers and 2 secrets")
	require.NotContains(t, pgDumpText(t, db), refresh[:30])

	require.NoError(t, gokeyring.DeleteAll(service))
	require.NoError(t, os.RemoveAll(gaia))
	r = w.gw("", "--keyring-service", service, "store", "copy", "--from", db, "--to", gaia, "--store-home", "gaia")
	require.Equal(t, 0, r.code, r.stderr)
	for name, doc := range ledgers {
		b, err := os.ReadFile(filepath.Join(gaia, name))
		require.NoError(t, err)
		require.Equal(t, doc, string(b), name)
	}
	v, err := gokeyring.Get(service, "mcp-tavily:TAVILY_API_KEY")
	require.NoError(t, err)
	require.Equal(t, apiKey, v)
	got := readChunked(t, service, "microsoft:default")
	require.Equal(t, blob, got, "the chunked connection came back whole")
}

// gaiaSentinel starts GAIA's manifest of a value stored in parts (hostabi/README.md).
const gaiaSentinel = "\x00gaia-chunked\x00"

// setChunked stores a value as GAIA does when it is long: parts of 1024 characters at
// "<user>#<n>", then the manifest "<sentinel><count>:<crc32>" in the slot itself.
func setChunked(t *testing.T, service, user, value string) {
	t.Helper()
	n := 0
	for rest := value; rest != ""; n++ {
		part := rest[:min(1024, len(rest))]
		rest = rest[len(part):]
		require.NoError(t, gokeyring.Set(service, user+"#"+strconv.Itoa(n), part))
	}
	require.NoError(t, gokeyring.Set(service, user, gaiaSentinel+strconv.Itoa(n)+":"+fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(value)))))
}

// readChunked reads a value stored whole or in GAIA's parts.
func readChunked(t *testing.T, service, user string) string {
	t.Helper()
	v, err := gokeyring.Get(service, user)
	require.NoError(t, err)
	body, ok := strings.CutPrefix(v, gaiaSentinel)
	if !ok {
		return v
	}
	count, err := strconv.Atoi(strings.Split(body, ":")[0])
	require.NoError(t, err)
	var b strings.Builder
	for i := range count {
		part, err := gokeyring.Get(service, user+"#"+strconv.Itoa(i))
		require.NoError(t, err)
		b.WriteString(part)
	}
	return b.String()
}
