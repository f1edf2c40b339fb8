package agents_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/agents"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/hostabi/memhost"
)

const gmailModify = "https://www.googleapis.com/auth/gmail.modify"

func write(t *testing.T, path, doc string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
}

func TestBuiltinsWithoutAFile(t *testing.T) {
	ctx := context.Background()
	r := agents.New(filepath.Join(t.TempDir(), agents.FileName))
	chat, ok, err := r.Agent(ctx, "builtin:chat")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, chat.ConsumesMCPServers)
	email, ok, err := r.Agent(ctx, "builtin:email")
	require.NoError(t, err)
	require.True(t, ok)
	require.Contains(t, email.RequiredConnectors["google"], gmailModify)
	require.NotEmpty(t, email.Reasons["google"])
	_, ok, err = r.Agent(ctx, "installed:nobody")
	require.NoError(t, err)
	require.False(t, ok)

	// Every built-in declaration names a catalog connector and scopes it offers.
	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	problems, err := r.Check(func(id string) ([]string, bool) {
		e, ok := cat.Entry(id)
		return e.AvailableScopes, ok
	})
	require.NoError(t, err)
	require.Empty(t, problems)
	for _, a := range agents.Builtins() {
		require.NoError(t, agents.ValidID(a.ID))
	}
}

func TestFileAgentsCustomIDsAndOverrides(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	home := t.TempDir()
	src := filepath.Join(dir, "reviewer.py")
	write(t, src, "print('review')\n")
	write(t, filepath.Join(home, "helper.py"), "x = 1\n")
	reviewerID, err := agents.CustomIDFile(src, "")
	require.NoError(t, err)
	require.Regexp(t, `^custom:[0-9a-f]{16}:reviewer$`, reviewerID)
	helperID, err := agents.CustomID([]byte("x = 1\n"), "helper")
	require.NoError(t, err)
	stale, err := agents.CustomID([]byte("old code"), "stale")
	require.NoError(t, err)
	write(t, filepath.Join(dir, "stale.py"), "new code")

	path := filepath.Join(dir, agents.FileName)
	write(t, path, `{"version": 1, "future": true, "agents": [
	  {"id": "installed:triage", "name": "Triage", "required_connectors": [
	    {"connector": "google", "scopes": ["`+gmailModify+`"], "reason": "label mail"}]},
	  {"id": "custom:reviewer", "source": "reviewer.py", "consumes_mcp_servers": true},
	  {"id": "custom:helper", "source": "~/helper.py"},
	  {"id": "`+stale+`", "source": "stale.py"},
	  {"id": "builtin:chat", "name": "My chat", "consumes_mcp_servers": false}
	]}`)
	r := agents.New(path, agents.WithUserHome(home))

	tri, ok, err := r.Agent(ctx, "installed:triage")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{gmailModify}, tri.RequiredConnectors["google"])
	require.Equal(t, "label mail", tri.Reasons["google"])

	rev, ok, err := r.Agent(ctx, reviewerID)
	require.NoError(t, err)
	require.True(t, ok, "the short custom form is named by hashing its source")
	require.True(t, rev.ConsumesMCPServers)
	_, ok, _ = r.Agent(ctx, helperID)
	require.True(t, ok, "~/ is the user's home")
	_, ok, _ = r.Agent(ctx, "custom:reviewer")
	require.False(t, ok, "the short form is not an id")
	_, ok, _ = r.Agent(ctx, stale)
	require.False(t, ok, "a custom agent whose code changed inherits nothing")
	problems := r.Problems()
	require.Len(t, problems, 1)
	require.Equal(t, stale, problems[0].Agent)
	require.Contains(t, problems[0].Message, "changed")

	chat, ok, _ := r.Get("builtin:chat")
	require.True(t, ok)
	require.Equal(t, "file", chat.Origin)
	require.False(t, chat.ConsumesMCPServers, "the file replaces a built-in agent")

	// The code of the reviewer changes: its id changes with it, and the file is re-read.
	write(t, src, "print('review, differently')\n")
	later := time.Now().Add(2 * time.Second)
	require.NoError(t, os.Chtimes(path, later, later))
	_, ok, _ = r.Agent(ctx, reviewerID)
	require.False(t, ok)
	newID, err := agents.CustomIDFile(src, "reviewer")
	require.NoError(t, err)
	_, ok, _ = r.Agent(ctx, newID)
	require.True(t, ok)
}

func TestBrokenFilesAreReportedNotIgnored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, agents.FileName)
	cases := map[string]string{
		"not json":          `{"agents": [`,
		"future version":    `{"version": 2, "agents": []}`,
		"unknown field":     `{"agents": [{"id": "installed:a", "requires": []}]}`,
		"no namespace":      `{"agents": [{"id": "a"}]}`,
		"bad custom id":     `{"agents": [{"id": "custom:abc:x"}]}`,
		"duplicate":         `{"agents": [{"id": "installed:a"}, {"id": "installed:a"}]}`,
		"no scopes":         `{"agents": [{"id": "installed:a", "required_connectors": [{"connector": "google", "scopes": []}]}]}`,
		"twice a connector": `{"agents": [{"id": "installed:a", "required_connectors": [{"connector": "g", "scopes": ["x"]}, {"connector": "g", "scopes": ["y"]}]}]}`,
		"source not custom": `{"agents": [{"id": "installed:a", "source": "a.py"}]}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			write(t, path, doc)
			later := time.Now().Add(time.Duration(len(name)) * time.Second)
			require.NoError(t, os.Chtimes(path, later, later))
			r := agents.New(path)
			_, err := r.List()
			require.ErrorContains(t, err, path)
			_, _, err = r.Agent(ctx, "builtin:chat")
			var ce *core.Error
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, "CORRUPT_LEDGER", ce.Code)
			require.Contains(t, ce.Fix, "mv "+path)
		})
	}
}

func TestValidIDAndCustomID(t *testing.T) {
	for _, ok := range []string{"builtin:chat", "installed:email", "native:x.y", "custom:e3b0c44298fc1c14:a_b"} {
		require.NoError(t, agents.ValidID(ok), ok)
	}
	for _, bad := range []string{"", "chat", "other:x", "builtin:", "builtin:a b", "custom:E3B0C44298FC1C14:a", "custom:e3b0c442:a", "custom:e3b0c44298fc1c14:"} {
		require.Error(t, agents.ValidID(bad), bad)
	}
	id, err := agents.CustomID(nil, "empty")
	require.NoError(t, err)
	require.Equal(t, "custom:e3b0c44298fc1c14:empty", id, "sha256 of no bytes starts e3b0c44298fc1c14")
	_, err = agents.CustomID(nil, "a:b")
	require.Error(t, err)
}

// The registry feeds the policy: one-click activation grants declared scopes (or "use"
// for an agent that consumes MCP servers), and a forwarded connection must cover the
// union of what its agents declare.
func TestRegistryFeedsThePolicy(t *testing.T) {
	ctx := context.Background()
	w := memhost.New(time.Unix(1_790_000_000, 0), 5)
	caps := w.Capabilities("")
	caps.Agents = agents.New(filepath.Join(t.TempDir(), agents.FileName))
	c, err := grantwire.New(ctx, grantwire.WithCapabilities(caps))
	require.NoError(t, err)
	defer c.Close(ctx)

	act, err := c.Activate(ctx, "mcp-github", "builtin:code", nil)
	require.NoError(t, err)
	require.Equal(t, "declared", act.GrantSource)
	require.Equal(t, []string{"use"}, act.Scopes)
	act, err = c.Activate(ctx, "mcp-memory", "builtin:chat", nil)
	require.NoError(t, err)
	require.Equal(t, "consumes_mcp_servers", act.GrantSource)
	_, err = c.Activate(ctx, "mcp-memory", "builtin:email", nil)
	require.True(t, errors.Is(err, grantwire.ErrConfiguration), "%v", err)

	_, err = c.ImportForwarded(ctx, grantwire.Forwarded{
		Provider: "google", ClientID: "cid", ClientSecret: "cs", RefreshToken: "rt",
		Scopes: []string{gmailModify}, GrantAgents: []string{"builtin:email", "builtin:calendar"},
	})
	var ge *grantwire.Error
	require.True(t, errors.As(err, &ge), "%v", err)
	require.Equal(t, "SCOPE_MISMATCH", ge.Code)
	require.ElementsMatch(t, []string{
		"https://www.googleapis.com/auth/gmail.send", "https://www.googleapis.com/auth/calendar.events",
	}, ge.MissingScopes)
	_, err = c.ImportForwarded(ctx, grantwire.Forwarded{
		Provider: "google", ClientID: "cid", ClientSecret: "cs", RefreshToken: "rt",
		Scopes: []string{gmailModify}, GrantAgents: []string{"installed:nobody"},
	})
	require.True(t, errors.Is(err, grantwire.ErrUnknownAgent), "%v", err)
}
