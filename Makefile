# weir: `make test` is the one test command (README and .ci/run call it).
export PATH := $(PATH):/usr/local/go/bin:$(HOME)/go/bin

GO ?= go
TEST_TIMEOUT ?= 30m

.PHONY: test deps vet unit build fuzz bench clean

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

clean:
	rm -rf bin
