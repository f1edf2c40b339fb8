package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/decisionlog"
	"github.com/grantwire/grantwire/internal/testworld/opatest"
)

// --engine opa-server=URL: every decision comes from an OPA server serving grantwire's
// bundle (the pinned OPA on 127.0.0.1), with the same output as the native engine, and a
// decision log names the bundle's revision.
func TestOPAServerEngine(t *testing.T) {
	tw := newWorld(t)
	url, revision := opatest.Serve(t, nil)
	srv := "opa-server=" + url
	r := tw.gw("--engine", srv, "grants", "grant", "google", "builtin:chat", "--scopes", gmailRead)
	require.Equal(t, 0, r.code, r.stderr)
	want := tw.gw("--engine", "native", "grants", "list", "--json")
	require.Equal(t, 0, want.code, want.stderr)
	got := tw.gw("--engine", srv, "grants", "list", "--json")
	require.Equal(t, 0, got.code, got.stderr)
	require.JSONEq(t, want.stdout, got.stdout)
	require.Contains(t, got.stdout, gmailRead)

	log := filepath.Join(t.TempDir(), "d.jsonl")
	r = tw.gw("--engine", srv, "--decision-log", log, "grants", "list")
	require.Equal(t, 0, r.code, r.stderr)
	f, err := os.Open(log)
	require.NoError(t, err)
	defer f.Close()
	events, err := decisionlog.ReadAll(f)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	for _, e := range events {
		require.Equal(t, revision, e.Revision)
	}

	// An unreachable server is a configuration error that says what to do.
	r = tw.gw("--engine", "opa-server=http://127.0.0.1:1", "status")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "start an OPA server on grantwire's bundle")
}
