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
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/audittest"
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
	opts = append([]grantwire.Option{grantwire.WithCapabilities(caps), grantwire.WithDecisionLog(l),
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

	// Every planted secret, and every digest a secret has, is absent.
	for _, s := range audittest.Secrets() {
		require.NotContains(t, log, s)
		require.NotContains(t, log, hostabi.Digest(s), "digest of %s", s)
		require.NotContains(t, log, strings.TrimPrefix(hostabi.Digest(s), "sha256:"))
	}
	// No digest or version token at all (but the policy's revision, the digest of
	// policy.wasm): redaction is by construction, not by list.
	scrubbed := strings.ReplaceAll(log, grantwire.EmbeddedRevision(), "")
	require.Empty(t, regexp.MustCompile(`sha256:[0-9a-f]{8,}`).FindAllString(scrubbed, -1))
	require.Empty(t, regexp.MustCompile(`"[0-9a-f]{16}"`).FindAllString(scrubbed, -1))
	require.NotContains(t, log, `"$ref":"arg#`)
	require.NotContains(t, log, `#access_token"`)

	// ... while the same decisions, before redaction, did carry them (the test can fail).
	var unredacted strings.Builder
	for _, d := range seen {
		unredacted.Write(d.Input)
		unredacted.Write(d.Output)
	}
	require.Regexp(t, `"refresh":"sha256:[0-9a-f]{16}"`, unredacted.String())
	require.Contains(t, unredacted.String(), `"$ref":"refresh#access_token"`)
	require.Contains(t, unredacted.String(), hostabi.Digest(audittest.RefreshToken))

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
		require.Equal(t, grantwire.EmbeddedRevision(), e.Revision)
		require.Empty(t, e.Bundles, "the embedded policy is not a bundle")
		require.Equal(t, "grantwire", e.Labels["app"])
		require.NotEmpty(t, e.Labels["id"])
		require.False(t, e.Timestamp.IsZero())
		require.Contains(t, e.Metrics, "timer_grantwire_operation_ns")
		require.Equal(t, steps[i].Want, e.Custom["outcome"], "entry %d (%s)", i, steps[i].Name)
		if i == audittest.HostStep {
			require.Nil(t, e.Result, "the keyring failed before the core decided")
			require.JSONEq(t, `{"op":"connections","args":{}}`, string(e.Input))
			require.Equal(t, "INSECURE_STORE", e.Custom["host_error"].(map[string]any)["code"])
			continue
		}
		require.NotNil(t, e.Result)
		var in struct {
			Op    string                     `json:"op"`
			Facts map[string]json.RawMessage `json:"facts"`
		}
		require.NoError(t, json.Unmarshal(e.Input, &in))
		require.NotEmpty(t, in.Op)
	}
	// The refresh (step 6) logged its facts with the digests pseudonymised consistently:
	// the digest sent to the token endpoint and the precondition on the stored token are
	// the same pseudonym.
	refresh := events[6]
	require.Contains(t, string(refresh.Input), `"refresh":"[redacted:`)
	var in struct {
		Facts struct {
			ConnAtLock map[string]any `json:"conn@lock"`
		} `json:"facts"`
	}
	require.NoError(t, json.Unmarshal(refresh.Input, &in))
	var out struct {
		Effects []map[string]any `json:"effects"`
	}
	require.NoError(t, json.Unmarshal(refresh.Result, &out))
	var expect any
	for _, eff := range out.Effects {
		if eff["kind"] == "connection.set_refresh" {
			expect = eff["expect"].(map[string]any)["refresh"]
			require.Equal(t, map[string]any{"$ref": "[redacted]"}, eff["refresh"])
		}
	}
	require.NotNil(t, expect)
	require.Equal(t, in.Facts.ConnAtLock["refresh"], expect)
	require.Contains(t, refresh.Masked, "/input/facts/conn@lock/refresh")
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
	c, err := grantwire.New(ctx, grantwire.WithDecisionLog(l), grantwire.WithCapabilities(caps),
		grantwire.WithObserver(func(grantwire.Decision) { n++ }))
	require.NoError(t, err)
	defer c.Close(ctx)
	_, err = c.ListGrants(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")))
}
