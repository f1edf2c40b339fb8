# grantwire — the project's vocabulary. Every target is one line in the README.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# -buildvcs=false keeps builds reproducible whatever the work tree's state (Go would stamp
# "modified" files); the commit is stamped from git instead, so `grantwire --version` names it.
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
export GOFLAGS := -buildvcs=false $(if $(GIT_COMMIT),-ldflags=-X=main.commit=$(GIT_COMMIT))
export CGO_ENABLED ?= 0

OPA := go tool opa
POLICY := policy/grantwire
CAPS := policy/capabilities.json

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

.PHONY: deps
deps: ## download Go modules and check the tools this project needs
	@scripts/deps.sh

.PHONY: wasm
wasm: ## regenerate policy/policy.wasm (pinned OPA from go.mod) and its sha256
	@scripts/build-wasm.sh

.PHONY: wasm-check
wasm-check: ## fail if policy.wasm differs from a fresh build of policy/
	@scripts/build-wasm.sh --check

.PHONY: native
native: ## regenerate core/nativeengine/policy_gen.go (Go compiled from the policy's OPA IR) and the runtime's test policy
	@scripts/build-native.sh

.PHONY: native-check
native-check: ## fail if core/nativeengine's generated code differs from a fresh build of policy/
	@scripts/build-native.sh --check

.PHONY: opa-cases
opa-cases: ## OPA's own test cases (every case of the OPA in go.mod) compiled to Go and run on the native engine: a table per family, then N passed, M failed
	@go run ./internal/tools/opacases

.PHONY: bundle
bundle: ## build/grantwire-bundle.tar.gz (Rego, policy.wasm, catalog: grantwire --bundle) and build/grantwire-rego-bundle.tar.gz (no Wasm: opa eval -b, opa run)
	go run -tags opa ./cmd/grantwire policy build --policy $(POLICY) -o build/grantwire-bundle.tar.gz
	go run -tags opa ./cmd/grantwire policy build --policy $(POLICY) --rego-only -o build/grantwire-rego-bundle.tar.gz

.PHONY: docs
docs: ## regenerate docs/policy.md from the policy's METADATA and rules (make test fails when it is stale)
	go run -tags opa ./cmd/grantwire policy docs --policy $(POLICY) -o docs/policy.md

.PHONY: lint
lint: ## gofmt, go vet, opa fmt, opa check --strict with the pure capabilities; no binary and no file over 2 MB unless marked generated in git (gitlint)
	@go run ./internal/tools/gitlint
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	go vet ./...
	go vet -tags opa ./cmd/grantwire
	$(OPA) fmt --fail -l $(POLICY)
	$(OPA) check --strict --capabilities $(CAPS) $(POLICY)
	$(OPA) fmt --fail -l docs/fleet/log-mask core/nativeengine/internal/irtest/policy
	$(OPA) check --strict docs/fleet/log-mask core/nativeengine/internal/irtest/policy

.PHONY: audit
audit: ## policy audit: opa fmt, opa check --strict (pure capabilities), opa test --coverage >= 95 %, METADATA, entrypoints
	@scripts/audit.sh

.PHONY: test
test: ## every test, in stages with a line each (deps, lint, wasm-check, native-check, audit, go tests, race, mcp-conformance); randomized tests on a fixed, seeded share
	@scripts/test.sh

.PHONY: soak
soak: ## make test with every randomized test on its whole input set (GRANTWIRE_SOAK=1), the engines' differential runs in full
	@GRANTWIRE_SOAK=1 scripts/test.sh

.PHONY: outside
outside: ## install the pinned software from outside the project (MCP TS SDK, two npm MCP servers, oidc-provider, the MCP conformance suite, Node 22) into build/outside with npm ci
	@bash -c '. scripts/outside-lib.sh && outside_ensure_installed'

.PHONY: mcp-conformance
mcp-conformance: ## the official MCP conformance suite's 33 client auth scenarios against grantwire's remote MCP client, then its 11 client-transport scenarios through grantwire mcp proxy (installs the pinned suite and Node 22 with npm)
	@scripts/mcp-conformance.sh
.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 30s; make test runs their seeds)
	@scripts/fuzz.sh

.PHONY: bench
bench: ## benchmarks, about 25 minutes on 2 cores (see BENCHMARKS.md)
	@scripts/bench.sh

.PHONY: demo
demo: ## the main job end to end on embedded defaults (builds only what it uses, and says so)
	@scripts/demo.sh

.PHONY: fleet-demo
fleet-demo: ## two machines share one connection through a private PostgreSQL store; a revoke on one is refused on the other (docs/fleet.md §6)
	@scripts/fleet-demo.sh

.PHONY: authserver
authserver: ## run the local OAuth authorization server of the tests and the demo (prints its endpoints as JSON)
	@go run ./internal/cmd/authserver
