# filemill — see README.md. `make run` and `make test` are the quick start.
GO       ?= go
BIN      ?= bin/filemill
PKGS     ?= ./...
TESTFLAGS ?= -count=1 -timeout 25m
# Test artifacts (the console's screenshots) go under test-output/_artifacts.
ARTIFACTS ?= -artifacts -outputdir $(CURDIR)/test-output

.PHONY: run build test fuzz bench chaos scaleout lint generate web deps engines services clean

# The binary is linked aside and copied into place. The page cache keeps a file the linker
# has just written in folios of up to 2 MiB, and a process maps a folio whole at its first
# touch: every process of a freshly linked binary (a CLI command included) would count
# some 60 MiB of it as resident instead of the ~28 MiB it touches. A copy is cached in
# small folios, as a binary read back from disk is.
build: engines
	$(GO) build -o $(BIN).linked ./cmd/filemill
	cp $(BIN).linked $(BIN).new && mv -f $(BIN).new $(BIN) && rm -f $(BIN).linked

# What the engines need to build and run (Debian packages), installed when missing.
engines:
	bash .ci/ensure-engines

# The service on its embedded defaults (SQLite, in-process Redis, local disk) in ./data.
run: build
	./$(BIN) serve

# Everything the suite needs that a machine may lack: PostgreSQL and Redis running,
# MinIO installed. Reuses what is already there.
deps:
	bash .ci/ensure-deps

test: deps
	$(GO) vet $(PKGS)
	@mkdir -p test-output
	$(GO) test $(TESTFLAGS) $(ARTIFACTS) $(PKGS)
	cd web && npm test --silent
	@find test-output/_artifacts -type d -name screens 2>/dev/null | sed 's/^/console screenshots: /' || true

# Every fuzz target (func FuzzX in a _test.go file) for FUZZTIME each: CI runs them for a
# few seconds; a campaign runs them longer (FUZZTIME=1000000x). Their seeds and what
# earlier campaigns found (testdata/fuzz/) run with every `make test` already.
# A run whose only failure is Go's fuzzer reporting "context deadline exceeded" (its time
# ran out while it was minimizing a new input; no failing input is written) runs again
# once; any failure with an input fails at once.
FUZZTIME ?= 5s
fuzz:
	@set -e; for f in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz: $$name in ./$$(dirname $$f) for $(FUZZTIME)"; \
			for try in 1 2; do \
				if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f) > fuzz.log 2>&1; then cat fuzz.log; break; fi; \
				cat fuzz.log; \
				if [ $$try = 2 ] || grep -q 'Failing input written' fuzz.log || ! grep -q 'context deadline exceeded' fuzz.log; then rm -f fuzz.log; exit 1; fi; \
				echo "fuzz: $$name stopped by its own deadline while minimizing; once more"; \
			done; \
		done; \
	done; rm -f fuzz.log

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./bench/...

# The fault campaign (bench/chaos, README "Fault campaign"): 2 api and 3 worker processes
# on a PostgreSQL, Redis and MinIO of its own under load, random faults for
# CHAOS_DURATION, then the invariants. CHAOS_SEED replays a schedule (printed each run);
# CI runs a short round (CHAOS_DURATION=45s).
CHAOS_DURATION ?= 10m
CHAOS_SEED ?=
chaos: deps
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_SEED=$(CHAOS_SEED) $(GO) test -tags chaos -run '^TestChaos$$' -count=1 -v -timeout 120m ./bench/chaos

# Scale-out figures (bench/chaos BenchmarkScaleOut, README "Fault campaign"): jobs/s and
# CPU per job of inspect, image.convert and office convert with 1-3 worker and 1-2 api
# processes on the campaign's PostgreSQL, Redis and MinIO, and subscription latency
# across two APIs. SCALE_DURATION and SCALE_WARMUP per row; SCALE_WORKERS, SCALE_APIS,
# SCALE_OPS and SCALE_CLIENTS narrow or widen the matrix.
SCALE_DURATION ?= 20s
SCALE_WARMUP ?= 5s
scaleout: deps
	SCALE_DURATION=$(SCALE_DURATION) SCALE_WARMUP=$(SCALE_WARMUP) $(GO) test -tags chaos -run '^$$' -bench '^BenchmarkScaleOut$$' -benchtime 1x -count=1 -v -timeout 60m ./bench/chaos

# gofmt, go vet, and the OpenAPI document against Redocly's recommended rules (a pinned
# @redocly/cli, installed with npm into a cache directory on first use).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags chaos ./bench/chaos
	bash .ci/openapi-lint
	@# The GraphQL code generated from graph/*.graphqls must be the committed one.
	$(GO) run github.com/99designs/gqlgen generate
	@out=$$(git status --porcelain -- graph/ gqlgen.yml); if [ -n "$$out" ]; then \
		echo "graph/: the generated code is not current; run 'go run github.com/99designs/gqlgen generate' and commit:"; \
		echo "$$out"; git diff --stat -- graph/; exit 1; fi
	@# The SDKs' code generated from rest/openapi.yaml must be the committed one.
	$(MAKE) --no-print-directory generate
	@out=$$(git status --porcelain -- client/api client/ts/src/openapi.d.ts); if [ -n "$$out" ]; then \
		echo "client/: the code generated from rest/openapi.yaml is not current; run 'make generate' and commit:"; \
		echo "$$out"; exit 1; fi
	@# The console built from web/src (deterministic: content-hashed names, no dates) must be
	@# the committed web/dist that go:embed serves.
	$(MAKE) --no-print-directory web
	@out=$$(git status --porcelain -- web/dist web/src/gql); if [ -n "$$out" ]; then \
		echo "web/: the built console is not current; run 'make web' and commit web/dist and web/src/gql:"; \
		echo "$$out"; exit 1; fi

# The SDKs' types and requests from rest/openapi.yaml: the Go SDK's with oapi-codegen
# (client/api), the TypeScript SDK's with openapi-typescript (client/ts, its npm
# packages installed by `npm ci` when missing).
generate:
	$(GO) generate ./client/api
	bash .ci/npm-ci client/ts
	cd client/ts && npm run --silent generate

# The console: typed GraphQL operations from graph/*.graphqls, a type check, and the
# Vite build into web/dist (committed, embedded by package web).
web:
	bash .ci/npm-ci client/ts
	bash .ci/npm-ci web
	cd web && npm run --silent build

clean:
	rm -rf bin test-output
