package main

// What only the OPA build of the command (go build -tags opa; policy.go, engine_rego.go)
// has, named here so that the default build can say how to get it.

// opaBuild is set by the OPA build.
var opaBuild bool

// opaBuildEngines are engines only the OPA build has: asking the default build for one is
// a usage error that says how to get it.
var opaBuildEngines = []string{"rego"}

// policyCommands are the subcommands of `grantwire policy` in the OPA build.
var policyCommands = []string{"audit", "build", "docs", "replay", "test"}

// opaBuildFix is how to get the OPA build (the policy commands and the rego engine), run
// in a checkout of grantwire.
const opaBuildFix = "go build -tags opa -o grantwire ./cmd/grantwire"

// needsOPABuild is a usage error for what only the OPA build has: its fix builds it.
type needsOPABuild struct{ what string }

func (e *needsOPABuild) Error() string {
	return e.what + " needs the OPA build of grantwire, which links OPA's Go packages: build it in a checkout of grantwire (see the README)"
}
