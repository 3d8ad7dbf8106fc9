# weir: `make test` is the one test command (README and .ci/run call it).
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin

GO ?= go
TEST_TIMEOUT ?= 30m

.PHONY: test deps vet unit build fuzz bench bench-go bench-suite clean

# -count=1: the black-box tests build the binary at run time from sources
# go test does not see as their inputs, so a cached result could be stale.
test: deps vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# Interop clients the black-box tests drive: librdkafka's kcat and the
# Debian Python clients (seen only by /usr/bin/python3).
deps:
	@./scripts/install-test-deps.sh

vet:
	$(GO) vet ./...

# Unit tests only, no interop deps needed.
unit:
	$(GO) test -race ./internal/...

build:
	$(GO) build -o bin/weir ./cmd/weir

# `make bench`: the Go microbenchmarks of the hot paths, then the
# side-by-side suite (bench/, a module of its own that `make test` and
# `go vet ./...` never see): it builds weir, kfake and nats-server, runs
# every case against them and the machine's limits (25 to 65 minutes on 2
# cores) and writes docs/benchmarks.md with its charts. Flags go in
# BENCH_FLAGS, e.g. `make bench-suite BENCH_FLAGS=-quick` for a smoke run
# of a few minutes, or BENCH_FLAGS='-cases latency'.
BENCH_FLAGS ?=

bench: bench-go bench-suite

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

bench-suite:
	cd bench && $(GO) run ./cmd/suite -out ../docs $(BENCH_FLAGS)

clean:
	rm -rf bin
