package grantwire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/internal/testworld/audittest"
)

// runLogged runs the audit scenario on a memhost client that logs to a file.
func runLogged(t *testing.T, opts ...grantwire.Option) (string, []grantwire.Decision) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l, err := decisionlog.Open(path)
	require.NoError(t, err)
	w, caps := audittest.World()
	var seen []grantwire.Decision
	opts = append([]grantwire.Option{grantwire.WithCapabilities(caps), grantwire.WithObserver(func(d grantwire.Decision) { _ = l.Log(d.Record()) }),
		grantwire.WithObserver(func(d grantwire.Decision) { seen = append(seen, d) })}, opts...)
	c, err := grantwire.New(ctx, opts...)
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, audittest.Run(ctx, c, w))
	require.NoError(t, l.Close())
	return path, seen
}

func TestDecisionLogHasNoSecrets(t *testing.T) {
	path, seen := runLogged(t)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	log := string(raw)

	// Every planted secret, and every digest and CRC-32 a secret has, is absent.
	for _, s := range audittest.Secrets() {
		require.NotContains(t, log, s)
		require.NotContains(t, log, host.Digest(s), "digest of %s", s)
		require.NotContains(t, log, strings.TrimPrefix(host.Digest(s), "sha256:"))
		require.NotContains(t, log, `"`+host.CRC32(s)+`"`, "CRC-32 of %s", s)
	}
	// No digest, CRC-32, client-id hash or version token at all (but the policy's revision,
	// the digest of policy.wasm): redaction is by construction, not by list.
	scrubbed := strings.ReplaceAll(log, bundle.EmbeddedRevision(), "")
	require.Empty(t, regexp.MustCompile(`sha256:[0-9a-f]{8,}`).FindAllString(scrubbed, -1))
	require.Empty(t, regexp.MustCompile(`"[0-9a-f]{16}"`).FindAllString(scrubbed, -1))
	require.Empty(t, regexp.MustCompile(`"[0-9a-f]{8}"`).FindAllString(scrubbed, -1))
	require.NotContains(t, log, `"$ref":"arg#`)
	require.NotContains(t, log, `#access_token"`)

	// ... while the same decisions, before redaction, did carry them (the test can fail).
	var unredacted strings.Builder
	for _, d := range seen {
		unredacted.Write(d.Input)
		unredacted.Write(d.Output)
	}
	require.Regexp(t, `"digest":"sha256:[0-9a-f]{16}"`, unredacted.String())
	require.Contains(t, unredacted.String(), `"$ref":"refresh#access_token"`)
	require.Contains(t, unredacted.String(), `"digest":"`+host.Digest(audittest.RefreshToken)+`"`)
	require.Contains(t, unredacted.String(), `"crc32":"`+host.CRC32(audittest.RefreshToken)+`"`)

	events, err := decisionlog.ReadAll(bytes.NewReader(raw))
	require.NoError(t, err)
	steps := audittest.Steps()
	require.Len(t, events, len(steps))
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ids := map[string]bool{}
	for i, e := range events {
		require.Equal(t, "grantwire/decide", e.Path)
		require.Regexp(t, uuid, e.DecisionID)
		require.False(t, ids[e.DecisionID], "decision ids are unique")
		ids[e.DecisionID] = true
		require.Equal(t, bundle.EmbeddedRevision(), e.Revision)
		require.Empty(t, e.Bundles, "the embedded policy is not a bundle")
		require.Equal(t, "grantwire", e.Labels["app"])
		require.NotEmpty(t, e.Labels["id"])
		require.False(t, e.Timestamp.IsZero())
		require.Contains(t, e.Metrics, "timer_grantwire_operation_ns")
		require.Equal(t, steps[i].Want, e.Custom["outcome"], "entry %d (%s)", i, steps[i].Name)
		require.NotNil(t, e.Result, "the core decided every operation, host failures included")
		var in struct {
			Op    string                     `json:"op"`
			Facts map[string]json.RawMessage `json:"facts"`
		}
		require.NoError(t, json.Unmarshal(e.Input, &in))
		require.NotEmpty(t, in.Op)
		if i == audittest.HostStep {
			// The keyring failed: the shell answered the need with a host error, and the
			// policy turned it into the operation's error. The log says both.
			require.Equal(t, "connections", in.Op)
			require.JSONEq(t, `{"host_error":{"code":"INSECURE_STORE","detail":"the credential store is locked","fix":"start a Secret Service (gnome-keyring)"}}`,
				string(in.Facts["conn|google"]))
			require.Equal(t, "INSECURE_STORE", decisionlog.Outcome(e.Result))
			require.Equal(t, "INSECURE_STORE", e.Custom["host_error"].(map[string]any)["code"])
		} else {
			require.NotContains(t, e.Custom, "host_error", "entry %d (%s)", i, steps[i].Name)
		}
	}

	// The refresh (step 6) logged its facts with the tokens pseudonymised consistently:
	// the rotated refresh token is told apart from the stored one, the client's hash still
	// matches the connection's (the tripwire), and the precondition on the stored
	// connection is the version the policy read under the lock.
	refresh := events[6]
	var in struct {
		Facts struct {
			Client struct {
				JSON struct {
					ClientID map[string]string `json:"client_id"`
				}
			} `json:"client@lock"`
			Conn struct {
				JSON struct {
					ClientIDHash string            `json:"client_id_hash"`
					Refresh      map[string]string `json:"refresh_token"`
				}
				Version string
			} `json:"conn@lock"`
			Refresh struct {
				JSON struct {
					Refresh map[string]string `json:"refresh_token"`
				}
			} `json:"refresh"`
		} `json:"facts"`
	}
	require.NoError(t, json.Unmarshal(refresh.Input, &in))
	pseudonym := regexp.MustCompile(`^\[redacted:[0-9]+\]$`)
	stored, rotated := in.Facts.Conn.JSON.Refresh, in.Facts.Refresh.JSON.Refresh
	require.Regexp(t, pseudonym, stored["digest"])
	require.Regexp(t, pseudonym, rotated["digest"])
	require.NotEqual(t, stored["digest"], rotated["digest"], "the server rotated the refresh token")
	require.Equal(t, "[redacted]", rotated["$ref"])
	require.Regexp(t, pseudonym, in.Facts.Conn.JSON.ClientIDHash)
	require.Equal(t, in.Facts.Client.JSON.ClientID["crc32"], in.Facts.Conn.JSON.ClientIDHash)
	require.Regexp(t, pseudonym, in.Facts.Conn.Version)
	var out struct {
		Effects []struct {
			Kind   string            `json:"kind"`
			User   string            `json:"user"`
			Expect map[string]string `json:"expect"`
			Value  map[string]any    `json:"value"`
		} `json:"effects"`
	}
	require.NoError(t, json.Unmarshal(refresh.Result, &out))
	require.NotEmpty(t, out.Effects)
	set := out.Effects[0]
	require.Equal(t, "keyring.set", set.Kind)
	require.Equal(t, "google:default", set.User)
	require.Equal(t, in.Facts.Conn.Version, set.Expect["version"])
	require.Equal(t, "[redacted]", set.Value["refresh_token"].(map[string]any)["$ref"])
	require.Equal(t, in.Facts.Conn.JSON.ClientIDHash, set.Value["client_id_hash"])
	require.Contains(t, refresh.Masked, "/input/facts/conn@lock/version")
	require.Contains(t, refresh.Masked, "/input/facts/refresh/json/refresh_token/digest")
	require.Contains(t, refresh.Masked, "/result/effects/0/expect/version")
}

func TestDecisionLogNamesTheBundle(t *testing.T) {
	b := testBundle(t, nil)
	path, _ := runLogged(t, grantwire.WithBundle(b))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	events, err := decisionlog.ReadAll(bytes.NewReader(raw))
	require.NoError(t, err)
	require.NotEmpty(t, events)
	for _, e := range events {
		require.Equal(t, b.Revision, e.Revision)
		require.Equal(t, map[string]decisionlog.BundleInfo{"grantwire": {Revision: b.Revision}}, e.Bundles)
	}
}

func TestObserverAndDecisionLogBothCalled(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	l := decisionlog.New(&buf)
	w, caps := audittest.World()
	_ = w
	n := 0
	c, err := grantwire.New(ctx, grantwire.WithObserver(func(d grantwire.Decision) { _ = l.Log(d.Record()) }), grantwire.WithCapabilities(caps),
		grantwire.WithObserver(func(grantwire.Decision) { n++ }))
	require.NoError(t, err)
	defer c.Close(ctx)
	_, err = c.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")))
}
