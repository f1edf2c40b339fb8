package grantwire_test

// The README tells the truth: its counts are the repository's, its layout names every
// folder, and the make targets and scripts it names exist. (The grantwire commands it
// names are checked against the command tree in cmd/grantwire, the opa eval example is run
// there too.)

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/conformance"
	"github.com/grantwire/grantwire/policy"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	return string(b)
}

// claims requires every number the pattern captures in the README to be want, and at
// least one such claim (a test that finds no claim proves nothing).
func claims(t *testing.T, doc, pattern string, want int) {
	t.Helper()
	ms := regexp.MustCompile(pattern).FindAllStringSubmatch(doc, -1)
	require.NotEmpty(t, ms, "the README no longer says %q", pattern)
	for _, m := range ms {
		n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		require.NoError(t, err)
		require.Equal(t, want, n, "README: %q says %d, the repository has %d", m[0], n, want)
	}
}

func TestREADMECounts(t *testing.T) {
	doc := readme(t)

	corpus, err := conformance.DefaultCorpus()
	require.NoError(t, err)
	claims(t, doc, `(\d+) scenarios`, len(corpus.Scenarios()))

	// Rego tests: every rule named test_* of a *_test.rego file, as `opa test` counts them.
	tests := 0
	testRule := regexp.MustCompile(`(?m)^test_[A-Za-z0-9_]+`)
	require.NoError(t, fs.WalkDir(policy.Sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.rego") {
			return err
		}
		b, err := fs.ReadFile(policy.Sources, p)
		tests += len(testRule.FindAll(b, -1))
		return err
	}))
	require.Greater(t, tests, 100)
	claims(t, doc, `(\d+) Rego tests`, tests)

	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	mcp := 0
	for _, e := range cat.Entries() {
		if e.Type == catalog.TypeMCPServer {
			mcp++
		}
	}
	claims(t, doc, `(\d+) connectors`, len(cat.Entries()))
	claims(t, doc, `catalog of connectors \((\d+),`, len(cat.Entries()))
	claims(t, doc, `(\d+) MCP servers from`, mcp)
}

// The layout block names every folder of the repository down to two levels: each top
// folder has an entry, and each folder inside it is named in that entry.
func TestREADMELayoutNamesEveryFolder(t *testing.T) {
	doc := readme(t)
	i := strings.Index(doc, "## Layout\n\n```\n")
	require.GreaterOrEqual(t, i, 0, "the README has a Layout block")
	block := doc[i+len("## Layout\n\n```\n"):]
	block = block[:strings.Index(block, "```")]
	entries := map[string]string{} // top folder → its entry's text
	var cur []string
	for _, line := range strings.Split(block, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, " ") {
			cur = nil
			for _, w := range strings.Fields(line) {
				if !strings.HasSuffix(w, "/") {
					break
				}
				cur = append(cur, strings.TrimSuffix(w, "/"))
			}
		}
		for _, top := range cur {
			top = strings.SplitN(top, "/", 2)[0]
			entries[top] += line + "\n"
		}
	}
	out, err := exec.Command("git", "ls-files").Output()
	require.NoError(t, err)
	dirs := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	require.NotEmpty(t, dirs)
	for d := range dirs {
		parts := strings.Split(d, "/")
		if strings.HasPrefix(parts[0], ".") || len(parts) > 2 || parts[len(parts)-1] == "testdata" && len(parts) > 2 {
			continue
		}
		entry, ok := entries[parts[0]]
		require.True(t, ok, "the layout has no entry for %s/", parts[0])
		if len(parts) == 2 {
			require.Regexp(t, `\b`+regexp.QuoteMeta(parts[1])+`\b`, entry, "the layout's %s/ entry does not name %s", parts[0], d)
		}
	}
}

// Every make target and script the README names exists.
func TestREADMEMakeTargetsAndScriptsExist(t *testing.T) {
	doc := readme(t)
	mk, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	targets := 0
	for _, m := range regexp.MustCompile("`make ([a-z-]+)").FindAllStringSubmatch(doc, -1) {
		targets++
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(m[1])+`:`, string(mk), "README names make %s", m[1])
	}
	require.Greater(t, targets, 5)
	scripts := 0
	for _, m := range regexp.MustCompile(`scripts/[a-z-]+\.sh`).FindAllString(doc, -1) {
		scripts++
		fi, err := os.Stat(m)
		require.NoError(t, err, "README names %s", m)
		require.NotZero(t, fi.Mode()&0o111, "%s is executable", m)
	}
	require.Positive(t, scripts)
}

// docs/behaviour.md describes remote MCP servers as built, with their home file (issue 20
// §1.12).
func TestBehaviourDocumentsRemoteMCPServers(t *testing.T) {
	doc, err := os.ReadFile("docs/behaviour.md")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), "not built") {
		t.Error("docs/behaviour.md still calls something not built")
	}
	if !strings.Contains(string(doc), "| `mcp_remote.json` |") {
		t.Error("docs/behaviour.md's table of home files omits mcp_remote.json")
	}
}
