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

# Distro packages (deb and rpm) of the four binaries with the systemd units, man pages and
# completions under packaging/. nfpm runs at a pinned version through the Go module proxy,
# so it stays out of go.mod. Package versions must start with a digit: a tag v1.2.3 gives
# 1.2.3, an untagged tree 0.0.0-dev.<describe> (a pre-release of 0.0.0).
NFPM       ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DIST       ?= dist
PKGVERSION ?= $(shell printf '%s' '$(VERSION)' | sed -e 's/^v\([0-9]\)/\1/' -e '/^[0-9]/!s/^/0.0.0-dev./' -e 's/[^A-Za-z0-9.+~-]/./g')

.PHONY: package
package: build
	@mkdir -p $(DIST)
	PKGVERSION='$(PKGVERSION)' $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DIST)/anet_$(PKGVERSION)_amd64.deb
	PKGVERSION='$(PKGVERSION)' $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager rpm --target $(DIST)/anet_$(PKGVERSION)_amd64.rpm

# C5: auto-reply can be removed from the build. CI builds and tests that build too (the
# integration tests also start a noautoreply anetd: TestNoAutoReplyBuild).
.PHONY: noautoreply
noautoreply:
	$(GO) build -tags noautoreply ./...
	$(GO) vet -tags noautoreply ./cmd/... ./pkg/node/...
	$(GO) test $(TESTFLAGS) -tags noautoreply,$(TESTTAGS) ./cmd/... ./pkg/node/... ./pkg/autoreply/...
test: noautoreply
