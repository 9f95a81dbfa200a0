# Islet: `make run` starts the server, `make test` runs every test.
SHELL := /bin/bash
SWIFT ?= swift
# WERROR=1 turns compiler warnings into errors (CI sets it).
SWIFT_FLAGS := $(if $(filter 1,$(WERROR)),-Xswiftc -warnings-as-errors,)
# Extra arguments for `islet serve --simulator`, e.g. make run ARGS="--port 9000".
ARGS ?=

.PHONY: all deps build run test bench bench-quick clean

all: build

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build -c release --product islet $(SWIFT_FLAGS)

run: build
	.build/release/islet serve --simulator $(ARGS)

test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build

# Benchmarks side by side with the limit and with peers; results in bench/results/.
bench: deps
	./Benchmarks/run.sh

bench-quick: deps
	./Benchmarks/run.sh --quick

clean:
	$(SWIFT) package clean

# Soak run (not run in CI): SOAK_SECONDS of mixed load against `islet serve` and a
# separate `islet sim` injecting faults, then every push accounted for.
SOAK_SECONDS ?= 600
.PHONY: soak
soak: build
	@./scripts/install-deps.sh python3
	python3 Benchmarks/soak.py --seconds $(SOAK_SECONDS)
