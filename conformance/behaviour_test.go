package conformance_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/internal/testworld/engines"
)

// behaviourPath is the behaviour specification, relative to this package.
const behaviourPath = "../docs/behaviour.md"

func readBehaviour(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(behaviourPath)
	require.NoError(t, err, "docs/behaviour.md is missing")
	return string(raw)
}

// behaviourErrorTable reads the error table of docs/behaviour.md#errors: the rows
// "| `CODE` | when | REST | exit |" of the Errors section.
func behaviourErrorTable(t *testing.T, doc string) map[string]core.ErrorInfo {
	t.Helper()
	start := strings.Index(doc, "\n## Errors\n")
	require.GreaterOrEqual(t, start, 0, "docs/behaviour.md has no \"## Errors\" section")
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	table := map[string]core.ErrorInfo{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.Len(t, cells, 4, "docs/behaviour.md#errors: a row must be | `CODE` | when | REST | exit |: %s", line)
		code := strings.Trim(strings.TrimSpace(cells[0]), "`")
		status, err := strconv.Atoi(strings.TrimSpace(cells[2]))
		require.NoError(t, err, "docs/behaviour.md#errors: REST status of %s", code)
		exit, err := strconv.Atoi(strings.TrimSpace(cells[3]))
		require.NoError(t, err, "docs/behaviour.md#errors: exit code of %s", code)
		_, dup := table[code]
		require.False(t, dup, "docs/behaviour.md#errors lists %s twice", code)
		table[code] = core.ErrorInfo{Status: status, Exit: exit}
	}
	return table
}

// The error table of docs/behaviour.md is the policy's (errors.table, published in the
// manifest that every surface takes REST statuses and exit codes from), on both engines:
// the same codes, each with the same REST status and CLI exit code.
func TestBehaviourErrorTable(t *testing.T) {
	ctx := context.Background()
	documented := behaviourErrorTable(t, readBehaviour(t))

	cat, err := catalog.Load(nil)
	require.NoError(t, err)
	re, err := engines.Rego(ctx, cat.Data())
	require.NoError(t, err)
	defer re.Close(ctx)
	we, err := engines.Wasm(ctx, cat.Data())
	require.NoError(t, err)
	defer we.Close(ctx)

	for _, eng := range []core.Engine{re, we} {
		published := eng.Manifest().Errors
		require.NotEmpty(t, published, "%s: the manifest publishes no error codes", eng.Name())
		for code, info := range published {
			got, ok := documented[code]
			require.True(t, ok, "%s: the policy has error code %s, docs/behaviour.md#errors does not", eng.Name(), code)
			require.Equal(t, info, got, "%s: docs/behaviour.md#errors gives %s REST %d exit %d; the policy says REST %d exit %d",
				eng.Name(), code, got.Status, got.Exit, info.Status, info.Exit)
		}
		for code := range documented {
			_, ok := published[code]
			require.True(t, ok, "%s: docs/behaviour.md#errors lists %s, which the policy does not have", eng.Name(), code)
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped, spaces as
// hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

var (
	headingRe    = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	explicitRe   = regexp.MustCompile(`<a id="([^"]+)"></a>`)
	selfLinkRe   = regexp.MustCompile(`\]\(#([^)]+)\)`)
	citationRe   = regexp.MustCompile(`behaviour\.md#([A-Za-z0-9_-]+)`)
	outsideRefRe = regexp.MustCompile(`\breference/[A-Za-z0-9_.-]+\.md`)
)

// behaviourAnchors returns every anchor of the document (explicit ids and heading slugs),
// failing on duplicates.
func behaviourAnchors(t *testing.T, doc string) map[string]bool {
	t.Helper()
	anchors := map[string]bool{}
	add := func(a, what string) {
		require.False(t, anchors[a], "docs/behaviour.md has anchor #%s twice (%s)", a, what)
		anchors[a] = true
	}
	for _, m := range headingRe.FindAllStringSubmatch(doc, -1) {
		add(slug(m[1]), "heading "+m[1])
	}
	for _, m := range explicitRe.FindAllStringSubmatch(doc, -1) {
		add(m[1], "explicit id")
	}
	return anchors
}

// citedFiles are the files of the repository that may cite the specification.
func citedFiles(t *testing.T) []string {
	t.Helper()
	exts := map[string]bool{".go": true, ".md": true, ".rego": true, ".sh": true, ".mjs": true, ".js": true, ".json": true, ".yaml": true}
	var files []string
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "build", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if exts[filepath.Ext(p)] || d.Name() == "Makefile" {
			files = append(files, p)
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

// Every citation of docs/behaviour.md#<anchor> in the repository (code, Rego, READMEs, the
// generated docs, scripts) names an anchor the document has, and so does every link inside
// the document; nothing cites a specification outside the repository.
func TestBehaviourCitations(t *testing.T) {
	doc := readBehaviour(t)
	anchors := behaviourAnchors(t, doc)
	for _, want := range []string{"vocabulary", "files", "gate", "tripwire", "refresh", "grants", "activations",
		"disconnect", "forwarded", "connect", "mcp", "catalog", "agents", "errors", "surfaces"} {
		require.True(t, anchors[want], "docs/behaviour.md has no section #%s", want)
	}
	for _, m := range selfLinkRe.FindAllStringSubmatch(doc, -1) {
		require.True(t, anchors[m[1]], "docs/behaviour.md links to #%s, which it does not have", m[1])
	}

	outside := []string{"BEHAVIOUR" + ".md", "../" + "shared/", "/work/" + "shared"}
	cited := 0
	for _, p := range citedFiles(t) {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		text := string(raw)
		rel, _ := filepath.Rel("..", p)
		for _, m := range citationRe.FindAllStringSubmatch(text, -1) {
			require.True(t, anchors[m[1]], "%s cites docs/behaviour.md#%s, which does not exist", rel, m[1])
			cited++
		}
		for _, o := range outside {
			if strings.Contains(text, o) {
				t.Errorf("%s cites %s, a document outside the repository; cite docs/behaviour.md#<section>", rel, o)
			}
		}
		for _, m := range outsideRefRe.FindAllString(text, -1) {
			_, err := os.Stat(filepath.Join("..", m))
			require.NoError(t, err, "%s cites %s, which is not in the repository", rel, m)
		}
	}
	require.Greater(t, cited, 10, "hardly anything cites docs/behaviour.md by section")
	t.Logf("%d citations of docs/behaviour.md checked", cited)
}
