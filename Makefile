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

# Fuzzing: every libFuzzer target of Fuzz/ for FUZZ_SECONDS (default 60) each, on a
# scratch copy of its corpus; `make test` replays the corpora (FuzzReplayTests).
.PHONY: fuzz
fuzz: deps
	./scripts/fuzz.sh
