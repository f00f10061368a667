# The ANet node. `make run` starts a node in the foreground; `make test` is what CI runs.
GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
CMDS    := anetd anet anet-sandboxd anet-egress
# Built as the packages ship them: static (no dynamic loader or libc start-up before main) and
# without urfave/cli's documentation generator, whose markdown library initialises at every
# start. anet-sandboxd exec starts once per command it runs.
BUILDENV   := CGO_ENABLED=0
BUILDFLAGS := -trimpath -tags urfave_cli_no_docs
# anet-runinit is the first program of every run (pkg/sandbox/runinit, pkg/sandbox/gate):
# anet-sandboxd binds it into each run from beside itself, so it is installed beside the
# helpers rather than as a command of its own. Every launch waits for it to start, so it links
# only what runs in the sandbox.
RUNINIT := ./cmd/anet-sandboxd/anet-runinit
# Tests build with the anettest tag: it compiles in the hooks that point model hosts at
# loopback fakes. Release binaries (make build) never have them; a test checks that.
TESTTAGS := anettest
# Integration tests run the real binaries as an unprivileged user; give them room.
TESTFLAGS ?= -count=1 -timeout 30m

.PHONY: all build run test unit integration host-test lint bench bench-compare clean demo dist-darwin macos-check deps fuzz fuzz-smoke first-build-note

all: build

# make deps installs what the README's commands need from the host (scripts/deps.sh): as root on
# Debian or Ubuntu with apt-get, otherwise it prints the one sudo command. make demo, make run
# and make test check first and install only when something is missing. DEPS=run installs the
# smaller set that make run and make demo need.
DEPS ?= test
deps:
	@bash scripts/deps.sh install $(DEPS)

# The first build of a fresh clone downloads the Go modules and compiles everything: say so
# before a few quiet minutes.
first-build-note:
	@test -x $(BIN)/anetd -a -x $(BIN)/anet || echo "Building the node (bin/). The first build downloads the Go modules and takes a few minutes; later ones take seconds."

build:
	@mkdir -p $(BIN)
	$(BUILDENV) $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(CMDS)) $(RUNINIT)

run: first-build-note
	@bash scripts/deps.sh ensure run
	@$(MAKE) --no-print-directory build
	./$(BIN)/anetd

# The tree builds and vets for every platform the node targets (O1): Linux, where bwrap is
# the sandbox; macOS, where the Seatbelt and micro-VM backends go; and FreeBSD, a Unix with no
# sandbox backend, where the node still starts and refuses untrusted tasks (the stand-in for
# any platform without one; Windows runs the node in WSL2, so it is not a target).
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 freebsd/amd64

# make demo: two throw-away nodes on loopback; a task from one is answered by the other in its
# sandbox, by a tiny demo agent whose model calls go to a stand-in model service started for
# the demo only. It needs bubblewrap and nothing else (no key, no network, no agent CLI).
# anetd and anet-egress are a demo build (the anettest tag): only its redirect hook reaches
# the stand-in, which listens on a unix socket; bin/demo is never installed.
DEMOBIN := $(BIN)/demo
demo:
	@bash scripts/deps.sh ensure demo
	@test -x $(DEMOBIN)/anet-demo || echo "Building the demo (bin/demo). The first build downloads the Go modules and takes a few minutes; later ones take seconds."
	@mkdir -p $(DEMOBIN)
	$(GO) build -trimpath -tags $(TESTTAGS) -o $(DEMOBIN)/ ./cmd/anetd ./cmd/anet-egress
	$(BUILDENV) $(GO) build $(BUILDFLAGS) -o $(DEMOBIN)/ ./cmd/anet ./cmd/anet-sandboxd ./cmd/anet-demo $(RUNINIT)
	./$(DEMOBIN)/anet-demo --bin $(DEMOBIN)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for p in $(PLATFORMS); do \
	  echo "build and vet for $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./... && \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... && \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet -tags $(TESTTAGS) ./... || exit 1; \
	done

# What tests keep for a person to look at (the dashboard's screenshots): under dist/, which
# the tests' unprivileged user must be able to write when make test runs as root.
ARTIFACTS ?= $(CURDIR)/dist/artifacts

unit:
	@mkdir -p $(ARTIFACTS) && chmod 1777 $(ARTIFACTS)
	ANET_ARTIFACTS=$(ARTIFACTS) $(GO) test $(TESTFLAGS) -tags $(TESTTAGS) $$($(GO) list ./... | grep -v /integration)

# integration/hosts (the hosts rig) is not part of integration: it boots Debian and Ubuntu
# guests and runs after the others, as host-test.
integration: build
	$(GO) test $(TESTFLAGS) -tags $(TESTTAGS) $$($(GO) list -tags $(TESTTAGS) ./integration/... | grep -v /integration/hosts)

# The hosts rig (integration/hosts, README "Hosts rig"): the node's real .deb installed and its
# real units running in stock Debian 12, Debian 13 (AppArmor) and Ubuntu 24.04 guests booted
# under QEMU (KVM where /dev/kvm is usable, else TCG), one boot per guest for all its
# scenarios. SCENARIO=c-boundaries runs that one alone, SCENARIO=noble one guest's. The
# images are built once by scripts/deps.sh (root).
SCENARIO ?=
host-test:
	@bash scripts/deps.sh ensure hosts
	ANET_HOSTS_SCENARIO='$(SCENARIO)' $(GO) test $(TESTFLAGS) -tags $(TESTTAGS) -v -run 'TestHosts' ./integration/hosts/

test: test-deps lint build unit integration host-test fuzz-smoke

.PHONY: test-deps
test-deps:
	@bash scripts/deps.sh ensure test

# Every native fuzz target (scripts/fuzz.sh), one after the other. make test runs each for a
# few seconds (its seeds, then a short search, new inputs minimised for 1 s at most); make
# fuzz is a campaign: FUZZTIME per target, FUZZ to pick targets by name (make fuzz FUZZ=Hello
# FUZZTIME=10m).
FUZZTIME ?= 10m
FUZZ     ?= .
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZ='$(FUZZ)' GO=$(GO) TESTTAGS=$(TESTTAGS) bash scripts/fuzz.sh

fuzz-smoke:
	FUZZTIME=$(FUZZSMOKETIME) FUZZMINIMIZETIME=1s GO=$(GO) TESTTAGS=$(TESTTAGS) bash scripts/fuzz.sh
FUZZSMOKETIME ?= 3s

bench:
	$(GO) test -run '^$$' -bench . -benchmem -tags $(TESTTAGS) ./...

# The node side by side with what users would pick instead, in one run, one line per metric
# (README, "Speed"). Not part of make test. The anchors are installed at these pinned versions
# into BENCH_CACHE by their own clients (apt, npm, go install); their code is never committed.
BENCH_CACHE              ?= $(HOME)/.cache/anet-bench
SRT_VERSION              := 0.0.83
PORTKEY_VERSION          := 1.15.2
HONO_NODE_SERVER_VERSION := 1.13.8
SMOKESCREEN              := github.com/stripe/smokescreen@v0.1.0

bench-compare: build
	SRT_VERSION=$(SRT_VERSION) PORTKEY_VERSION=$(PORTKEY_VERSION) HONO_NODE_SERVER_VERSION=$(HONO_NODE_SERVER_VERSION) \
	  SMOKESCREEN=$(SMOKESCREEN) GO=$(GO) ./internal/benchcompare/install-anchors.sh $(BENCH_CACHE)
	GO=$(GO) $(GO) run -tags $(TESTTAGS) ./internal/benchcompare -anchors $(BENCH_CACHE) -bin $(BIN)

clean:
	rm -rf $(BIN) $(DIST)

# Distro packages (deb and rpm) of the four binaries with the systemd units, man pages and
# completions under packaging/ (C4). nfpm runs at a pinned version through the Go module
# proxy, so it stays out of go.mod. The version comes from git (packaging/pkgmeta/version.go:
# v1.2.3 gives 1.2.3, later commits 1.2.3+gitN.HASH, an untagged tree 0.0.0~gitN.HASH), is
# computed once per make run, and can be given: make package PKGVERSION=1.2.3.
NFPM       ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
DIST       ?= dist
PKGVERSION ?= $(eval PKGVERSION := $$(shell $(GO) run ./packaging/pkgmeta version))$(PKGVERSION)
# The package build differs from `make build` on purpose: position-independent, with full
# RELRO (-bindnow) and stripped; static like it (no cgo, so no libc dependency and one binary
# for every distribution); packaging/check-elf.sh refuses anything else.
PKGBIN     ?= $(DIST)/bin
PKGSTAGE   ?= $(DIST)/stage
PKG_LDFLAGS = -s -w -bindnow -X main.version=$(PKGVERSION)

.PHONY: package package-bin
package-bin:
	@mkdir -p $(PKGBIN)
	$(BUILDENV) $(GO) build $(BUILDFLAGS) -buildmode=pie -ldflags '$(PKG_LDFLAGS)' -o $(PKGBIN)/ $(addprefix ./cmd/,$(CMDS)) $(RUNINIT)
	sh packaging/check-elf.sh $(addprefix $(PKGBIN)/,$(CMDS) anet-runinit)

# The changelog, the copyright file and the compressed man pages are generated into
# PKGSTAGE; nfpm.yaml reads PKGBIN and PKGSTAGE from the environment. make package-deb builds
# the .deb alone (the hosts rig installs it in its guest).
package: package-deb
	PKGVERSION='$(PKGVERSION)' PKGBIN='$(PKGBIN)' PKGSTAGE='$(PKGSTAGE)' $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager rpm --target '$(DIST)/anet-$(PKGVERSION)-1.x86_64.rpm'

.PHONY: package-deb
package-deb: package-bin
	rm -rf $(PKGSTAGE)
	$(GO) run ./packaging/pkgmeta stage -out $(PKGSTAGE) -version '$(PKGVERSION)'
	PKGVERSION='$(PKGVERSION)' PKGBIN='$(PKGBIN)' PKGSTAGE='$(PKGSTAGE)' $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager deb --target '$(DIST)/anet_$(PKGVERSION)-1_amd64.deb'

# macOS (M1): one tarball per Mac architecture, laid out for a prefix such as /usr/local:
# bin/ (anet, anetd), libexec/anet/ (the helpers, where anetd looks for them), the man pages,
# the shell completions and the launchd user agent that is the user unit's counterpart.
# Static (no cgo) and stripped, like the Linux packages; built on any host.
# packaging/darwin_test.go checks the contents, the plist and that each binary is Mach-O for
# its architecture. make macos-check (on a Mac only) proves the sandbox itself.
DARWIN_ARCHS ?= amd64 arm64
DARWIN_LDFLAGS = -s -w -X main.version=$(PKGVERSION)
dist-darwin:
	@set -e; for arch in $(DARWIN_ARCHS); do \
	  name=anet-$(PKGVERSION)-darwin-$$arch; stage=$(DIST)/darwin-stage/$$name; \
	  rm -rf $$stage; mkdir -p $$stage/bin $$stage/libexec/anet $$stage/share/man/man1 $$stage/share/man/man8 \
	    $$stage/share/anet $$stage/share/zsh/site-functions $$stage/share/bash-completion/completions \
	    $$stage/share/fish/vendor_completions.d; \
	  for c in anet anetd; do \
	    $(BUILDENV) GOOS=darwin GOARCH=$$arch $(GO) build $(BUILDFLAGS) -ldflags '$(DARWIN_LDFLAGS)' -o $$stage/bin/$$c ./cmd/$$c; done; \
	  for c in anet-sandboxd anet-egress; do \
	    $(BUILDENV) GOOS=darwin GOARCH=$$arch $(GO) build $(BUILDFLAGS) -ldflags '$(DARWIN_LDFLAGS)' -o $$stage/libexec/anet/$$c ./cmd/$$c; done; \
	  cp packaging/man/*.1 $$stage/share/man/man1/; cp packaging/man/*.8 $$stage/share/man/man8/; \
	  cp packaging/launchd/dev.anet.anetd.plist $$stage/share/anet/; \
	  cp packaging/completions/_anet $$stage/share/zsh/site-functions/; \
	  cp packaging/completions/anet.bash $$stage/share/bash-completion/completions/anet; \
	  cp packaging/completions/anet.fish $$stage/share/fish/vendor_completions.d/; \
	  cp README.md LICENSE NOTICE $$stage/; \
	  chmod -R u=rwX,go=rX $$stage; \
	  tar -C $(DIST)/darwin-stage --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
	    -czf $(DIST)/$$name.tar.gz $$name; \
	  echo "$(DIST)/$$name.tar.gz"; \
	done

# What only a Mac can show (M1): the profile compiles under sandbox-exec, every self-check item
# holds, the port filter is exact, and runs, probe and self-test work. Prints each item and
# exits non-zero on any miss. Run it on macOS 14 or 15 as the user that runs the node.
macos-check:
	sh integration/macos/check.sh

# C5: auto-reply can be removed from the build. CI builds and tests that build too (the
# integration tests also start a noautoreply anetd: TestNoAutoReplyBuild).
.PHONY: noautoreply
noautoreply:
	$(GO) build -tags noautoreply ./...
	$(GO) vet -tags noautoreply ./cmd/... ./pkg/node/...
	$(GO) test $(TESTFLAGS) -tags noautoreply,$(TESTTAGS) ./cmd/... ./pkg/node/... ./pkg/autoreply/...
test: noautoreply
