package opaserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/core/nativeengine"
	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/host"
	"github.com/grantwire/grantwire/internal/layout"
	"github.com/grantwire/grantwire/internal/testworld/audittest"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
)

// The fleet set-up of docs/fleet.md: an OPA server runs grantwire's bundle and the
// decision-log mask (docs/fleet/log-mask) as a second bundle, with OPA's decision log on.
// A client on it runs the audit scenario (secrets planted everywhere): every query is
// logged by OPA, with no secret, no digest or CRC-32 of one and no reference to one (what
// secret descriptions say, client-id hashes and version tokens as pseudonyms, references
// as "[redacted]"), as package decisionlog redacts grantwire's own logs.
func TestFleetDecisionLogMask(t *testing.T) {
	ctx := context.Background()
	b, opa, err := opatest.Bundle()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "grantwire.tar.gz")
	require.NoError(t, writeFile(path, b.Bytes))
	url, logs, stop, err := opatest.StartArgs(opa, "--set", "decision_logs.console=true", "--bundle", path, "../../docs/fleet/log-mask")
	require.NoError(t, err)
	defer stop()

	w, caps := audittest.World()
	var seen []grantwire.Decision
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps), grantwire.WithEngineName(grantwire.EngineOPAServer+"="+url),
		grantwire.WithObserver(func(d grantwire.Decision) { seen = append(seen, d) }))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.Equal(t, b.Revision, c.Revision(), "the revision of grantwire's bundle, beside the mask's")
	require.NoError(t, audittest.Run(ctx, c, w))

	var entries []map[string]any
	var log, docs strings.Builder // every line; the queries and decisions
	var decisions bytes.Buffer    // OPA's entries of grantwire/decide
	for _, line := range bytes.Split(logs(), []byte("\n")) {
		if !bytes.Contains(line, []byte(`"msg":"Decision Log"`)) {
			continue
		}
		var e map[string]any
		require.NoError(t, json.Unmarshal(line, &e))
		log.Write(line)
		for _, k := range []string{"input", "result"} {
			b, err := json.Marshal(e[k])
			require.NoError(t, err)
			docs.Write(b)
		}
		if e["path"] == "grantwire/decide" { // beside the manifest and catalog, read once
			entries = append(entries, e)
			decisions.Write(line)
			decisions.WriteByte('\n')
		}
	}
	require.GreaterOrEqual(t, len(entries), len(audittest.Steps())-1, "every decision is logged")
	masked := 0
	for _, e := range entries {
		if x, ok := e["masked"].([]any); ok {
			masked += len(x)
		}
	}
	require.Positive(t, masked, "the mask replaced something")
	s := log.String()
	for _, secret := range audittest.Secrets() {
		require.NotContains(t, s, secret)
		require.NotContains(t, s, strings.TrimPrefix(host.Digest(secret), "sha256:"), "digest of %s", secret)
		require.NotContains(t, s, layout.ClientIDHash(secret), "CRC-32 of %s", secret)
	}
	var redacted []string
	for _, e := range entries {
		for _, k := range []string{"input", "result"} {
			maskedMembers(t, e[k], &redacted)
		}
	}
	require.NotEmpty(t, redacted)
	for _, k := range []string{"digest", "crc32", "client_id_hash", "version"} {
		require.Regexp(t, `"`+k+`":"\[redacted:[0-9]+\]"`, docs.String(), "%s gets pseudonyms", k)
	}
	require.Contains(t, docs.String(), `"$ref":"[redacted]"`)

	// The masked entries replay as they were decided (the pseudonyms keep equal digests
	// equal): `grantwire policy replay` works on the fleet's logs.
	eng, err := nativeengine.New(ctx, nativeengine.WithData(c.Catalog().Data()))
	require.NoError(t, err)
	rep, err := decisionlog.Replay(ctx, bytes.NewReader(decisions.Bytes()), eng)
	require.NoError(t, err)
	require.Equal(t, len(entries), rep.Replayed, "%+v", rep.Skipped)
	require.Empty(t, rep.Changes)

	// ... while the queries and decisions did carry them (the test can fail).
	var sent strings.Builder
	for _, d := range seen {
		sent.Write(d.Input)
		sent.Write(d.Output)
	}
	require.Regexp(t, `"digest":"sha256:[0-9a-f]{16}"`, sent.String())
	require.Regexp(t, `"crc32":"[0-9a-f]{8}"`, sent.String())
	require.Contains(t, sent.String(), `"$ref":`)
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

// maskedMembers checks every string member of v whose name derives from a secret (digest,
// crc32, client_id_hash, version, $ref, access_token, ...) is a redaction, and lists them.
// The digest and CRC-32 of the empty string stay: they reveal nothing and the policy
// compares with them.
func maskedMembers(t *testing.T, v any, out *[]string) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if str, ok := m.(string); ok && secretish[k] && !emptySecret[str] {
				require.Regexp(t, `^\[redacted(:[0-9]+)?\]$`, str, "member %s", k)
				*out = append(*out, k)
			}
			maskedMembers(t, m, out)
		}
	case []any:
		for _, m := range x {
			maskedMembers(t, m, out)
		}
	}
}

var emptySecret = map[string]bool{"sha256:e3b0c44298fc1c14": true, "00000000": true}

var secretish = map[string]bool{"digest": true, "crc32": true, "client_id_hash": true, "version": true, "$ref": true, "access_token": true, "refresh_token": true,
	"id_token": true, "client_secret": true, "code_verifier": true, "api_key": true, "password": true}
