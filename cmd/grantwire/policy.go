//go:build opa

package main

// The `policy` commands: grantwire's policy audited with OPA's Go packages (package audit).
// They link OPA, so only the OPA build has them (go build -tags opa ./cmd/grantwire);
// policy_default.go says how to get them in the default build.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/audit"
	"github.com/grantwire/grantwire/decisionlog"
)

func init() {
	extraCommands = append(extraCommands, newPolicyCmd)
	opaBuild = true
}

// checkFailed is a check of a policy command that failed: stale docs, a failed audit or
// Rego test, a replay that found changes with --exit-code (exit 1).
type checkFailed struct{ err error }

func (c checkFailed) Error() string { return c.err.Error() }
func (c checkFailed) Unwrap() error { return c.err }
func (c checkFailed) ExitCode() int { return 1 }

func checkFailedf(format string, args ...any) error {
	return checkFailed{fmt.Errorf(format, args...)}
}

func newPolicyCmd(a *app) *cobra.Command {
	return a.command(spec{
		use:   "policy",
		short: "Audit grantwire's policy with OPA's tools: audit, bundles, docs, decision-log replay, tests",
		long: "grantwire's decision logic is Rego (policy/grantwire), compiled to policy.wasm. These commands\n" +
			"audit it (format, strict compile, tests, coverage, METADATA, entrypoints), build the OPA\n" +
			"bundle that grantwire and OPA servers share, generate the policy reference, replay a\n" +
			"decision log against another policy, and run the policy's Rego tests.\n\n" +
			"They link OPA's Go packages, so only the OPA build of grantwire has them:\n" +
			"  " + opaBuildFix,
		example: "  grantwire policy audit\n" +
			"  grantwire policy build -o build/grantwire-bundle.tar.gz && grantwire --bundle build/grantwire-bundle.tar.gz status\n" +
			"  grantwire --decision-log decisions.jsonl status && grantwire policy replay decisions.jsonl --policy ./policy/grantwire",
	}, a.policyAuditCmd(), a.policyBuildCmd(), a.policyDocsCmd(), a.policyReplayCmd(), a.policyTestCmd())
}

func (a *app) policyAuditCmd() *cobra.Command {
	var dir string
	var threshold float64
	return a.command(spec{
		use:   "audit",
		short: "Audit the policy: opa fmt, strict compile against the capabilities, Rego tests, coverage ≥ 95 %, METADATA, entrypoints",
		long: "Audit grantwire's policy with OPA's Go packages, as `make audit` does with OPA's command line:\n" +
			"  format       every module (tests included) is formatted as `opa fmt` formats it\n" +
			"  compile      strict compile against policy/capabilities.json: only builtins that run inside\n" +
			"               policy.wasm (no clock, randomness, network or host calls)\n" +
			"  tests        the Rego tests (*_test.rego) pass, and there is at least one\n" +
			"  coverage     their line coverage of the policy, test files excluded, reaches --threshold\n" +
			"  metadata     every package and public rule has a METADATA title and description\n" +
			"  entrypoints  decide, manifest and every operation's decision rule are `entrypoint: true`,\n" +
			"               and decide routes exactly the operations the manifest lists\n" +
			"Without --policy the embedded policy is audited. A failed check exits 1 and lists what to fix.\n" +
			"The default threshold is 95, or $COVERAGE_THRESHOLD.",
		example: "  grantwire policy audit\n" +
			"  grantwire policy audit --policy ./policy/grantwire --threshold 100\n" +
			"  grantwire policy audit --json | jq '.checks[] | select(.ok | not)'",
		args: noArgs,
		run: operation[*audit.AuditReport]{
			parse: func(cmd *cobra.Command, _ []string) error {
				if !cmd.Flags().Changed("threshold") {
					if env := a.Getenv("COVERAGE_THRESHOLD"); env != "" {
						v, err := strconv.ParseFloat(env, 64)
						if err != nil {
							return usagef("COVERAGE_THRESHOLD=%q is not a number", env)
						}
						threshold = v
					}
				}
				if threshold <= 0 || threshold > 100 {
					return usagef("--threshold must be a percentage in (0, 100], not %g", threshold)
				}
				return nil
			},
			do: func(ctx context.Context, _ []string) (*audit.AuditReport, error) {
				fsys, root, err := audit.PolicyFS(dir)
				if err != nil {
					return nil, err
				}
				return audit.Audit(ctx, fsys, root, audit.AuditOptions{Threshold: threshold})
			},
			render: func(rep *audit.AuditReport, _ []string) error {
				audit.WriteAudit(a.Stdout, rep, dir == "")
				return nil
			},
			then: func(rep *audit.AuditReport, _ []string) error {
				if failed := rep.FailedChecks(); len(failed) > 0 {
					return checkFailedf("policy audit failed: %s (see above)", strings.Join(failed, ", "))
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&dir, "policy", "", "audit the Rego of this directory instead of the embedded policy")
			f.Float64Var(&threshold, "threshold", audit.DefaultThreshold, "the minimum line coverage of the policy, in percent")
		},
	})
}

func (a *app) policyBuildCmd() *cobra.Command {
	var o audit.BuildOptions
	var out, catalogFile string
	return a.command(spec{
		use:   "build",
		short: "Build the OPA bundle (.manifest, Rego, policy.wasm, data.json with the catalog)",
		long: "Build an OPA bundle that grantwire (--bundle) and OPA's bundle service accept. Without\n" +
			"--policy, the embedded policy is built (and must match the embedded policy.wasm). With\n" +
			"--policy DIR, the revision ends with `git describe` of DIR. OPA's own command line\n" +
			"(opa eval -b, opa run --server -b) evaluates a bundle built with --rego-only: it has no\n" +
			"WebAssembly engine unless OPA was built with one.",
		example: "  grantwire policy build -o build/grantwire-bundle.tar.gz\n" +
			"  grantwire policy build --policy ./policy/grantwire --catalog my-catalog.json -o my-bundle.tar.gz\n" +
			"  grantwire policy build --rego-only -o build/grantwire-rego-bundle.tar.gz && opa eval -b build/grantwire-rego-bundle.tar.gz 'data.grantwire.manifest.errors.BUSY'",
		args: noArgs,
		run: operation[*audit.Built]{
			do: func(ctx context.Context, _ []string) (*audit.Built, error) {
				var err error
				if o.Catalog, err = audit.ReadCatalogFile(catalogFile); err != nil {
					return nil, err
				}
				if o.PolicyDir != "" && o.Revision == "" {
					o.Describe = audit.GitDescribe(o.PolicyDir)
				}
				b, err := audit.Build(ctx, o)
				if err != nil {
					return nil, err
				}
				return b, writeFileAll(out, b.Bytes)
			},
			json: func(b *audit.Built, _ []string) any {
				return map[string]any{"file": out, "bytes": len(b.Bytes), "revision": b.Revision, "wasm_sha256": b.WasmSHA256}
			},
			render: func(b *audit.Built, _ []string) error {
				if o.RegoOnly {
					a.printf("wrote %s (%d bytes): revision %s, Rego only\n", out, len(b.Bytes), b.Revision)
					return nil
				}
				a.printf("wrote %s (%d bytes): revision %s, policy.wasm sha256 %s\n", out, len(b.Bytes), b.Revision, b.WasmSHA256)
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVarP(&out, "output", "o", "grantwire-bundle.tar.gz", "the bundle file to write")
			f.StringVar(&o.PolicyDir, "policy", "", "compile the Rego of this directory instead of the embedded policy")
			f.StringVar(&catalogFile, "catalog", "", "ship this catalog JSON as data.catalog instead of the embedded one")
			f.StringVar(&o.Revision, "revision", "", "the manifest's revision (default: sha256 of policy.wasm, @ git describe)")
			f.BoolVar(&o.RegoOnly, "rego-only", false, "leave policy.wasm out, for OPA's command line and other OPA builds without WebAssembly (grantwire cannot run it)")
		},
	})
}

func (a *app) policyDocsCmd() *cobra.Command {
	var out, dir string
	var check bool
	return a.command(spec{
		use:   "docs",
		short: "Generate the policy reference (docs/policy.md) from the policy's METADATA and rules",
		long: "Generate the policy reference from the policy's METADATA and rules and write it to --output\n" +
			"(\"-\": standard output, the reference itself with or without --json). With --check, write\n" +
			"nothing and exit 1 when the file differs from a fresh generation. With --json,\n" +
			"{\"file\", \"bytes\"} once written, {\"file\", \"up_to_date\"} with --check.",
		example: "  grantwire policy docs -o docs/policy.md\n" +
			"  grantwire policy docs --check\n" +
			"  grantwire policy docs --policy ./policy/grantwire -o - | less",
		args: noArgs,
		run: operation[policyDocs]{
			do: func(context.Context, []string) (policyDocs, error) {
				fsys, root, err := audit.PolicyFS(dir)
				if err != nil {
					return policyDocs{}, err
				}
				doc, err := audit.Docs(fsys, root)
				if err != nil {
					return policyDocs{}, err
				}
				d := policyDocs{doc: append(doc, '\n')}
				switch {
				case out == "-":
				case check:
					cur, err := os.ReadFile(out)
					d.stale, d.missing = err != nil || string(cur) != string(d.doc), errors.Is(err, os.ErrNotExist)
				default:
					err = writeFileAll(out, d.doc)
				}
				return d, err
			},
			json: func(d policyDocs, _ []string) any {
				switch {
				case out == "-":
					return verbatim(d.doc)
				case check:
					return map[string]any{"file": out, "up_to_date": !d.stale}
				}
				return map[string]any{"file": out, "bytes": len(d.doc)}
			},
			render: func(d policyDocs, _ []string) error {
				switch {
				case out == "-":
					_, err := a.Stdout.Write(d.doc)
					return err
				case !check:
					a.printf("wrote %s\n", out)
				case !d.stale:
					a.printf("%s is up to date\n", out)
				}
				return nil
			},
			then: func(d policyDocs, _ []string) error {
				// The command that writes the file again: make docs for the checkout's own
				// reference, the command itself for any other file or policy.
				regen := "grantwire policy docs -o " + out
				if dir != "" {
					regen += " --policy " + dir
				}
				switch {
				case d.missing:
					return checkFailedf("%s does not exist: run `%s`", out, regen)
				case d.stale && out == audit.DocsPath && dir == "":
					return checkFailedf("%s is stale: run `make docs`", out)
				case d.stale:
					return checkFailedf("%s is stale: run `%s`", out, regen)
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVarP(&out, "output", "o", audit.DocsPath, `the file to write ("-": standard output)`)
			f.StringVar(&dir, "policy", "", "document the Rego of this directory instead of the embedded policy")
			f.BoolVar(&check, "check", false, "do not write: fail when the file differs from a fresh generation")
		},
	})
}

func (a *app) policyReplayCmd() *cobra.Command {
	var bundleFile, dir, catalogFile string
	var exitCode bool
	return a.command(spec{
		use:   "replay <log>",
		short: "Re-evaluate a decision log against a policy and report the decisions that would change",
		long: "Replay every decision of a grantwire decision log (OPA's format, path grantwire/decide) against\n" +
			"a bundle (--bundle), the Rego of a directory (--policy, on the rego engine) or the embedded\n" +
			"policy, and report the decisions whose outcome would change: impact analysis for a policy\n" +
			"change. LOG \"-\" reads standard input.",
		example: "  grantwire policy replay decisions.jsonl --policy ./policy/grantwire\n" +
			"  grantwire policy replay decisions.jsonl --bundle new-bundle.tar.gz --exit-code\n" +
			"  grantwire policy replay - --json < decisions.jsonl",
		args: exactArgs(1),
		run: operation[replayReport]{
			do: func(ctx context.Context, args []string) (replayReport, error) {
				var in io.Reader = a.Stdin
				if args[0] != "-" {
					f, err := os.Open(args[0])
					if err != nil {
						return replayReport{}, err
					}
					defer f.Close()
					in = f
				}
				e, against, err := audit.ReplayEngine(ctx, bundleFile, dir, catalogFile)
				if errors.Is(err, audit.ErrCombined) {
					return replayReport{}, usagef("%v", err)
				}
				if err != nil {
					return replayReport{}, err
				}
				defer e.Close(ctx)
				rep, err := decisionlog.Replay(ctx, in, e)
				return replayReport{against, rep}, err
			},
			render: func(r replayReport, args []string) error {
				audit.WriteReplay(a.Stdout, args[0], r.Against, r.Report)
				return nil
			},
			then: func(r replayReport, _ []string) error {
				if exitCode && len(r.Changes) > 0 {
					return checkFailedf("%d decisions would change", len(r.Changes))
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&bundleFile, "bundle", "", "replay against this bundle (wasm engine)")
			f.StringVar(&dir, "policy", "", "replay against the Rego of this directory (rego engine)")
			f.StringVar(&catalogFile, "catalog", "", "the catalog JSON to evaluate with (default: embedded; a bundle has its own)")
			f.BoolVar(&exitCode, "exit-code", false, "exit 1 when any decision would change")
		},
	})
}

func (a *app) policyTestCmd() *cobra.Command {
	var dir string
	var verbose bool
	return a.command(spec{
		use:   "test",
		short: "Run the policy's Rego tests (*_test.rego) with OPA's test runner",
		long: "Run the Rego tests of the embedded policy (or of --policy DIR) and report like `opa test`;\n" +
			"with --json, {\"policy\", \"passed\", \"failed\", \"tests\": [...]}. A failed test, or no test\n" +
			"at all, exits 1.",
		example: "  grantwire policy test\n" +
			"  grantwire policy test --policy ./policy/grantwire -v\n" +
			"  grantwire policy test --json | jq -r '.tests[] | select(.pass | not) | .name'",
		args: noArgs,
		run: operation[regoTests]{
			do: func(ctx context.Context, _ []string) (regoTests, error) {
				fsys, root, err := audit.PolicyFS(dir)
				if err != nil {
					return regoTests{}, err
				}
				results, err := audit.RunTests(ctx, fsys, root)
				if errors.Is(err, audit.ErrNoTests) {
					return regoTests{}, checkFailed{err}
				}
				failed := audit.Failed(results)
				return regoTests{
					doc:   map[string]any{"policy": root, "passed": len(results) - failed, "failed": failed, "tests": audit.TestResults(results)},
					write: func() error { return audit.WriteTests(a.Stdout, results, verbose) },
					ran:   len(results), failed: failed,
				}, err
			},
			json:   func(t regoTests, _ []string) any { return t.doc },
			render: func(t regoTests, _ []string) error { return t.write() },
			then: func(t regoTests, _ []string) error {
				if t.failed > 0 {
					return checkFailedf("%d of %d Rego tests failed", t.failed, t.ran)
				}
				return nil
			},
		}.runE(a),
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&dir, "policy", "", "test the Rego of this directory instead of the embedded policy")
			cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every test")
		},
	})
}

// policyDocs is what policy docs generated (doc) and, with --check, whether the file
// differs from it.
type policyDocs struct {
	doc     []byte
	stale   bool
	missing bool // (with stale) --check found no file
}

// replayReport is what policy replay reports: the decisions that would change, against
// what.
type replayReport struct {
	Against string `json:"against"`
	*decisionlog.Report
}

// regoTests is what policy test ran: its report (doc) and how to write it as text.
type regoTests struct {
	doc         map[string]any
	write       func() error
	ran, failed int
}

// writeFileAll writes a generated file, making its directory first.
func writeFileAll(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
