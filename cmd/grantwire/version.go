package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/bundle"
	"github.com/grantwire/grantwire/policy"
)

// Set at link time: go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD)".
// Unset, they come from the build information Go records (the module version of
// `go install …@version`; the VCS revision of a build in a git checkout).
var (
	version string
	commit  string
)

// versionInfo is what `grantwire version --json` prints.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Build is "default" (no OPA package linked) or "opa" (-tags opa: policy commands, rego).
	Build string `json:"build"`
	Go    string `json:"go"`
	// PolicySHA256 is the sha256 of the policy.wasm decisions are made with (the embedded
	// one, or the --bundle's); PolicyRevision names it as decision logs do.
	PolicySHA256   string   `json:"policy_sha256"`
	PolicyRevision string   `json:"policy_revision"`
	Engine         string   `json:"engine"`
	Engines        []string `json:"engines"`
}

func buildVersion() (v, c string) {
	v, c = version, commit
	info, ok := debug.ReadBuildInfo()
	if ok {
		if v == "" {
			v = info.Main.Version
		}
		if c == "" {
			dirty := ""
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					c = s.Value
				case "vcs.modified":
					if s.Value == "true" {
						dirty = "-dirty"
					}
				}
			}
			if c != "" {
				c += dirty
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

// versionOf describes this binary, deciding with wasm (a bundle's policy.wasm, else the
// embedded one) on the given engine.
func versionOf(wasm []byte, engine string) versionInfo {
	v, c := buildVersion()
	sum := sha256.Sum256(wasm)
	build := "default"
	if opaBuild {
		build = "opa"
	}
	return versionInfo{
		Version: v, Commit: c, Build: build, Go: runtime.Version(),
		PolicySHA256: hex.EncodeToString(sum[:]), PolicyRevision: bundle.RevisionOf(wasm),
		Engine: engine, Engines: engineNames(),
	}
}

// versionLine is what `grantwire --version` prints.
func versionLine() string {
	vi := versionOf(policy.Wasm, defaultEngine)
	return fmt.Sprintf("grantwire %s (commit %s, %s build, policy sha256 %s, engine %s, %s)\n",
		vi.Version, vi.Commit, vi.Build, vi.PolicySHA256, vi.Engine, vi.Go)
}

func (a *app) versionCmd() *cobra.Command {
	return a.command(spec{
		use:   "version",
		short: "Print grantwire's version, commit, policy sha256 and engine",
		long: `Print the version and commit of this binary, its build (default: no OPA package linked; opa:
the policy commands and the rego engine), the sha256 of the policy.wasm it decides with (the
embedded one, or --bundle's) and the engine --engine selects.`,
		example: `  grantwire version
  grantwire --version
  grantwire version --json | jq -r .policy_sha256`,
		args: noArgs,
		run: operation[versionInfo]{
			do: func(context.Context, []string) (versionInfo, error) {
				wasm := policy.Wasm
				b, err := a.Bundle()
				if err != nil {
					return versionInfo{}, err
				}
				if b != nil {
					wasm = b.Wasm
				}
				return versionOf(wasm, a.engineName), nil
			},
			render: func(vi versionInfo, _ []string) error {
				a.printf("grantwire %s\n", vi.Version)
				a.printf("commit:  %s\n", vi.Commit)
				a.printf("build:   %s (engines: %s)\n", vi.Build, joinAnd(vi.Engines))
				a.printf("policy:  sha256 %s (revision %s)\n", vi.PolicySHA256, vi.PolicyRevision)
				a.printf("engine:  %s\n", vi.Engine)
				a.printf("go:      %s\n", vi.Go)
				return nil
			},
		}.runE(a),
	})
}
