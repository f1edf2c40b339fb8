package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/catalog"
	"github.com/grantwire/grantwire/core"
	"github.com/grantwire/grantwire/core/regoengine"
	"github.com/grantwire/grantwire/core/wasmengine"
	"github.com/grantwire/grantwire/decisionlog"
)

// ExitError carries the exit code a command wants (1: a check failed, such as stale docs,
// a failed audit or, with --exit-code, a replay that found changes; 2: a misused flag).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// PolicyCommand returns the `policy` command tree: audit (the policy audit), build (an
// OPA bundle), docs (the policy reference), replay (impact analysis of a policy change on
// a decision log) and test (the policy's Rego tests). A check that fails returns an
// *ExitError.
func PolicyCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "policy",
		Short: "Audit grantwire's policy with OPA's tools: audit, bundles, docs, decision-log replay, tests",
		Long: "grantwire's decision logic is Rego (policy/grantwire), compiled to policy.wasm. These commands\n" +
			"audit it (format, strict compile, tests, coverage, METADATA, entrypoints), build the OPA\n" +
			"bundle that grantwire and OPA servers share, generate the policy reference, replay a\n" +
			"decision log against another policy, and run the policy's Rego tests.",
		Example: "  grantwire policy audit\n" +
			"  grantwire policy build -o build/grantwire-bundle.tar.gz && grantwire --bundle build/grantwire-bundle.tar.gz status\n" +
			"  grantwire --decision-log decisions.jsonl status && grantwire policy replay decisions.jsonl --policy ./policy/grantwire",
		SilenceUsage: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true // the grantwire root command owns completion
	root.AddCommand(auditCommand(), buildCommand(), docsCommand(), replayCommand(), testCommand())
	return root
}

func readCatalog(file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if _, err := catalog.Load(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return raw, nil
}

func buildCommand() *cobra.Command {
	var o BuildOptions
	var out, catalogFile string
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the OPA bundle (.manifest, Rego, policy.wasm, data.json with the catalog)",
		Long: "Build an OPA bundle that grantwire (--bundle), `opa eval -b`, `opa run --server -b` and OPA's\n" +
			"bundle service accept. Without --policy, the embedded policy is built (and must match the\n" +
			"embedded policy.wasm). With --policy DIR, the revision ends with `git describe` of DIR.",
		Example: "  grantwire policy build -o build/grantwire-bundle.tar.gz\n" +
			"  grantwire policy build --policy ./policy/grantwire --catalog my-catalog.json -o my-bundle.tar.gz\n" +
			"  opa eval -b build/grantwire-bundle.tar.gz 'data.grantwire.manifest.errors.BUSY'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Catalog, err = readCatalog(catalogFile); err != nil {
				return err
			}
			if o.PolicyDir != "" && o.Revision == "" {
				o.Describe = GitDescribe(o.PolicyDir)
			}
			b, err := Build(cmd.Context(), o)
			if err != nil {
				return err
			}
			if dir := filepath.Dir(out); dir != "." {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			}
			if err := os.WriteFile(out, b.Bytes, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes): revision %s, policy.wasm sha256 %s\n",
				out, len(b.Bytes), b.Revision, b.WasmSHA256)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "grantwire-bundle.tar.gz", "the bundle file to write")
	f.StringVar(&o.PolicyDir, "policy", "", "compile the Rego of this directory instead of the embedded policy")
	f.StringVar(&catalogFile, "catalog", "", "ship this catalog JSON as data.catalog instead of the embedded one")
	f.StringVar(&o.Revision, "revision", "", "the manifest's revision (default: sha256 of policy.wasm, @ git describe)")
	f.BoolVar(&o.RegoOnly, "rego-only", false, "leave policy.wasm out, for OPA builds without WebAssembly (grantwire cannot run it)")
	return cmd
}

func docsCommand() *cobra.Command {
	var out, dir string
	var check bool
	cmd := &cobra.Command{
		Use:   "docs",
		Short: "Generate the policy reference (docs/policy.md) from the policy's METADATA and rules",
		Example: "  grantwire policy docs -o docs/policy.md\n" +
			"  grantwire policy docs --check\n" +
			"  grantwire policy docs --policy ./policy/grantwire -o - | less",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fsys, root, err := policyFS(dir)
			if err != nil {
				return err
			}
			doc, err := Docs(fsys, root)
			if err != nil {
				return err
			}
			doc = append(doc, '\n')
			if out == "-" {
				_, err := cmd.OutOrStdout().Write(doc)
				return err
			}
			if check {
				cur, err := os.ReadFile(out)
				if err != nil || !bytes.Equal(cur, doc) {
					return &ExitError{Code: 1, Err: fmt.Errorf("%s is stale: run `make docs`", out)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date\n", out)
				return nil
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(out, doc, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", DocsPath, `the file to write ("-": standard output)`)
	f.StringVar(&dir, "policy", "", "document the Rego of this directory instead of the embedded policy")
	f.BoolVar(&check, "check", false, "do not write: fail when the file differs from a fresh generation")
	return cmd
}

// replayEngine builds the engine a replay evaluates with, and names its policy.
func replayEngine(ctx context.Context, bundleFile, dir, catalogFile string) (core.Engine, string, error) {
	if bundleFile != "" && (dir != "" || catalogFile != "") {
		return nil, "", &ExitError{Code: 2, Err: errors.New("--bundle carries its own policy and catalog: do not combine it with --policy or --catalog")}
	}
	if bundleFile != "" {
		b, err := grantwire.OpenBundle(bundleFile)
		if err != nil {
			return nil, "", err
		}
		cat, err := catalog.Load(b.Catalog)
		if err != nil {
			return nil, "", err
		}
		if cat, err = cat.WithBuiltinAgents(b.Agents); err != nil { // the bundle's data, whole
			return nil, "", err
		}
		e, err := wasmengine.New(ctx, wasmengine.WithModule(b.Wasm), wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", grantwire.ErrBundle, err)
		}
		return e, fmt.Sprintf("bundle %s (revision %s)", bundleFile, b.Revision), nil
	}
	raw, err := readCatalog(catalogFile)
	if err != nil {
		return nil, "", err
	}
	cat, err := catalog.Load(raw)
	if err != nil {
		return nil, "", err
	}
	// A catalog file replaces the connectors; the built-in agents stay (as for --catalog).
	if cat, err = cat.WithBuiltinAgents(catalog.Default().BuiltinAgents()); err != nil {
		return nil, "", err
	}
	if dir != "" {
		e, err := regoengine.New(ctx, regoengine.WithModules(os.DirFS(dir)), regoengine.WithData(cat.Data()))
		if err != nil {
			return nil, "", err
		}
		return e, fmt.Sprintf("the Rego of %s (rego engine)", dir), nil
	}
	e, err := wasmengine.New(ctx, wasmengine.WithData(cat.Data()), wasmengine.WithPoolSize(1))
	if err != nil {
		return nil, "", err
	}
	return e, fmt.Sprintf("the embedded policy (revision %s)", grantwire.EmbeddedRevision()), nil
}

func replayCommand() *cobra.Command {
	var bundleFile, dir, catalogFile string
	var asJSON, exitCode bool
	cmd := &cobra.Command{
		Use:   "replay LOG",
		Short: "Re-evaluate a decision log against a policy and report the decisions that would change",
		Long: "Replay every decision of a grantwire decision log (OPA's format, path grantwire/decide) against\n" +
			"a bundle (--bundle), the Rego of a directory (--policy, on the rego engine) or the embedded\n" +
			"policy, and report the decisions whose outcome would change: impact analysis for a policy\n" +
			"change. LOG \"-\" reads standard input.",
		Example: "  grantwire policy replay decisions.jsonl --policy ./policy/grantwire\n" +
			"  grantwire policy replay decisions.jsonl --bundle new-bundle.tar.gz --exit-code\n" +
			"  grantwire policy replay - --json < decisions.jsonl",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			var in io.Reader = cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			e, against, err := replayEngine(ctx, bundleFile, dir, catalogFile)
			if err != nil {
				return err
			}
			defer e.Close(ctx)
			rep, err := decisionlog.Replay(ctx, in, e)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(w, struct {
					Against string `json:"against"`
					*decisionlog.Report
				}{against, rep}); err != nil {
					return err
				}
			} else {
				writeReport(w, args[0], against, rep)
			}
			if exitCode && len(rep.Changes) > 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("%d decisions would change", len(rep.Changes))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&bundleFile, "bundle", "", "replay against this bundle (wasm engine)")
	f.StringVar(&dir, "policy", "", "replay against the Rego of this directory (rego engine)")
	f.StringVar(&catalogFile, "catalog", "", "the catalog JSON to evaluate with (default: embedded; a bundle has its own)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&exitCode, "exit-code", false, "exit 1 when any decision would change")
	return cmd
}

func writeReport(w io.Writer, log, against string, rep *decisionlog.Report) {
	fmt.Fprintf(w, "replayed %d of %d decisions of %s against %s\n", rep.Replayed, rep.Entries, log, against)
	revs := make([]string, 0, len(rep.Revisions))
	for r, n := range rep.Revisions {
		if r == "" {
			r = "(none)"
		}
		revs = append(revs, fmt.Sprintf("%s (%d)", r, n))
	}
	if len(revs) > 0 {
		sort.Strings(revs)
		fmt.Fprintf(w, "logged under: %s\n", strings.Join(revs, ", "))
	}
	if len(rep.Changes) == 0 {
		fmt.Fprintf(w, "no decision would change\n")
	} else {
		fmt.Fprintf(w, "%d decisions would change:\n", len(rep.Changes))
		for _, c := range rep.Changes {
			fmt.Fprintf(w, "  #%d %s %s: %s -> %s (%s differ)\n", c.Entry, c.DecisionID, c.Op, c.Before, c.After, strings.Join(c.What, ", "))
		}
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, "%d entries skipped:\n", len(rep.Skipped))
		for _, s := range rep.Skipped {
			fmt.Fprintf(w, "  #%d %s: %s\n", s.Entry, s.DecisionID, s.Reason)
		}
	}
}

func testCommand() *cobra.Command {
	var dir string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Run the policy's Rego tests (*_test.rego) with OPA's test runner",
		Example: "  grantwire policy test\n" +
			"  grantwire policy test --policy ./policy/grantwire -v",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fsys, root, err := policyFS(dir)
			if err != nil {
				return err
			}
			return RunTests(cmd.Context(), fsys, root, cmd.OutOrStdout(), verbose)
		},
	}
	cmd.Flags().StringVar(&dir, "policy", "", "test the Rego of this directory instead of the embedded policy")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every test")
	return cmd
}

// RunTests runs the Rego tests of the modules under root with OPA's test runner and
// reports like `opa test`. No test at all is a failure (an empty suite proves nothing).
func RunTests(ctx context.Context, fsys fs.FS, root string, w io.Writer, verbose bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return err
		}
		mods[p] = m
		return nil
	})
	if err != nil {
		return err
	}
	ch, err := tester.NewRunner().SetCompiler(ast.NewCompiler().WithEnablePrintStatements(true)).Run(ctx, mods)
	if err != nil {
		return err
	}
	var results []*tester.Result
	failed := 0
	for r := range ch {
		results = append(results, r)
		if r.Fail || r.Error != nil {
			failed++
		}
	}
	if len(results) == 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("no Rego tests under %s", root)}
	}
	replay := make(chan *tester.Result, len(results))
	for _, r := range results {
		replay <- r
	}
	close(replay)
	if err := (tester.PrettyReporter{Output: w, Verbose: verbose}).Report(replay); err != nil {
		return err
	}
	if failed > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d Rego tests failed", failed, len(results))}
	}
	return nil
}

// writeJSON prints v as the policy commands' --json output: indented, HTML left alone.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
