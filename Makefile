# Islet: `make run` starts the server, `make test` runs every test (against a
# throwaway PostgreSQL server that scripts/with-postgres.sh starts and removes).
SHELL := /bin/bash
SWIFT ?= swift
# WERROR=1 turns compiler warnings into errors (CI sets it). EXTRA_SWIFT_FLAGS are
# added to every build of the suite, the sanitizer suites and the fuzz targets (CI
# keeps line tables only as debug information: about 6% less compiling).
SWIFT_FLAGS := $(if $(filter 1,$(WERROR)),-Xswiftc -warnings-as-errors,) $(EXTRA_SWIFT_FLAGS)
# WHOLE_MODULE=1 (CI sets it) builds the suite a module at a time, in a build folder
# of its own (.build/whole-module): about an eighth less compiling from nothing
# (scripts/build-mode.sh). Without it, the debug build's incremental compiling.
TEST_BUILD := $(if $(filter 1,$(WHOLE_MODULE)),$(shell ./scripts/build-mode.sh) --build-path .build/whole-module,)
# Extra arguments for `islet serve --simulator`, e.g. make run ARGS="--port 9000".
ARGS ?=

.PHONY: all deps build run test test-sanitize screenshots bench bench-quick clean

all: build

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build -c release --product islet $(SWIFT_FLAGS)

run: build
	.build/release/islet serve --simulator $(ARGS)

test: deps
	./scripts/test-tools.sh
	$(SWIFT) build --build-tests $(TEST_BUILD) $(SWIFT_FLAGS)
	# Every tier runs (ISLET_TEST_TIERS=all: PostgreSQL, the browser, the Python
	# tools, Node.js, child processes), against one throwaway PostgreSQL server
	# (ISLET_TEST_POSTGRES_URL), in four runs: the whole suite (the
	# store contracts on both backends, the rest on SQLite); the service, delivery
	# and API suites again on PostgreSQL (the OpenAPI conformance run there only);
	# and ThreadCensusTests and BodyMemoryTests each alone in a process of their
	# own, where counting the process's threads, and measuring its resident
	# memory, is exact (scripts/test-passes.sh).
	SWIFT=$(SWIFT) SWIFT_TEST_FLAGS="$(TEST_BUILD)" ./scripts/test-passes.sh

# PNGs of each dashboard page, into docs/screenshots/: the browser test's own flow
# (scripts/browser/dashboard_flow.py in headless Chromium) with screenshots on.
screenshots: deps
	./scripts/test-tools.sh
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	ISLET_TEST_TIERS=browser,python ISLET_SCREENSHOTS=$(CURDIR)/docs/screenshots $(SWIFT) test --skip-build --filter DashboardBrowserTests

# The suites where races and memory errors live (Package.swift's
# ISLET_SANITIZER_SCOPE) under AddressSanitizer, then under ThreadSanitizer, each
# in a build folder of its own; suppressions (each with its proof) in
# scripts/sanitizers/.
# SANITIZERS=address (or thread) runs one.
SANITIZERS ?= address thread
test-sanitize: deps
	./scripts/test-tools.sh
	for sanitizer in $(SANITIZERS); do ./scripts/test-sanitize.sh $$sanitizer || exit 1; done

# Benchmarks side by side with the limit and with peers; results in bench/results/.
bench: deps
	./Benchmarks/run.sh

bench-quick: deps
	./Benchmarks/run.sh --quick

clean:
	$(SWIFT) package clean

# Fuzzing: every libFuzzer target of Fuzz/ for FUZZ_SECONDS (default 60) each, on a
# scratch copy of its corpus; `make test` replays the corpora (FuzzReplayTests).
.PHONY: fuzz
fuzz: deps
	./scripts/fuzz.sh

# Soak run (not run in CI): SOAK_SECONDS of mixed load against `islet serve` and a
# separate `islet sim` injecting faults, then every push accounted for.
SOAK_SECONDS ?= 600
.PHONY: soak
soak: build
	@./scripts/install-deps.sh python3
	python3 Benchmarks/soak.py --seconds $(SOAK_SECONDS)
