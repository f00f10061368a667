# The ANet node. `make run` starts a node in the foreground; `make test` is what CI runs.
GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
CMDS    := anetd anet anet-sandboxd anet-egress
# Tests build with the anettest tag: it compiles in the hooks that point model hosts at
# loopback fakes. Release binaries (make build) never have them; a test checks that.
TESTTAGS := anettest
# Integration tests run the real binaries as an unprivileged user; give them room.
TESTFLAGS ?= -count=1 -timeout 30m

.PHONY: all build run test unit integration lint bench clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(CMDS))

run: build
	./$(BIN)/anetd

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags $(TESTTAGS) ./...

unit:
	$(GO) test $(TESTFLAGS) -tags $(TESTTAGS) $$($(GO) list ./... | grep -v /integration)

integration: build
	$(GO) test $(TESTFLAGS) -tags $(TESTTAGS) ./integration/...

test: lint build unit integration

bench:
	$(GO) test -run '^$$' -bench . -benchmem -tags $(TESTTAGS) ./...

clean:
	rm -rf $(BIN)
