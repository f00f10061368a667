#!/usr/bin/env bash
# What the README's commands need from the host, in one place (make deps; make demo, make run
# and make test call `deps.sh ensure SET` first). On Debian and Ubuntu it installs what is
# missing with apt-get when run as root, and otherwise prints the one sudo command that would;
# elsewhere it names what is missing. It never touches the host's kernel, sysctls or services.
#
#   deps.sh check SET     exit 0 when SET is complete, else list what is missing (exit 1)
#   deps.sh ensure SET    check; install what is missing (root on Debian) or say how
#   deps.sh install SET   install SET whatever check says (the apt packages are idempotent)
#
# SET is run (bubblewrap for the sandbox), demo (the same), test (everything make test uses)
# or hosts (only the hosts rig: its image and what builds and boots it; test includes it).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
set_=${2:-test}

# Debian packages, by what needs them (README "make test").
# bubblewrap: the Linux sandbox (L1). ca-certificates: the system store the egress verifies
# against (E11).
run_pkgs=(bubblewrap ca-certificates)
# groff-base, man-db, zsh, fish, systemd: the packaging tests render the man pages, run the
# shell completions and verify and score the units. socat, curl, python3: tests drive the relay
# and the egress tunnel with them and parse generated TOML with tomllib. dpkg, lintian, rpm,
# rpm2cpio, cpio, rpmlint, binutils (readelf): the package tests build the .deb and .rpm, lint
# them, compare versions, install the .deb into a throw-away root and check the binaries'
# hardening (C4). qemu-system-x86, xz-utils: the vm tier's tests (V1). nodejs, npm: the real
# agent CLIs the integration tests run in the sandbox. chromium: the dashboard's test drives
# it headless, to prove peers' text stays inert in a real browser (U1). debootstrap, e2fsprogs,
# curl (Ubuntu's keyring package): the hosts rig's guest images (below).
hosts_pkgs=(debootstrap e2fsprogs curl qemu-system-x86)
test_pkgs=("${run_pkgs[@]}" make git groff-base man-db zsh fish systemd socat curl python3
  dpkg lintian rpm rpm2cpio cpio rpmlint binutils qemu-system-x86 xz-utils chromium debootstrap e2fsprogs)

# Where the vm tests find Debian's plain kernel package (pkg/sandbox/vm/guestimage reads it
# from here, not from apt's archive dir, which apt cleans). Download only: the host's kernel
# is not touched.
kernel_cache=/var/cache/anet

# The hosts rig (integration/hosts) boots stock guests built from their distribution's packages
# by scripts/hosts-image.sh into hosts_dir: Debian 12 for most scenarios, Debian 13 for the
# AppArmor ones, Ubuntu 24.04 for its restriction of user namespaces. Building them needs root (debootstrap), so they are made here, once: the key
# beside each image is the hash of the build script, which holds the package lists, and of the
# suite, and a changed script builds new images.
hosts_dir=$kernel_cache/hosts
hosts_suites=(bookworm trixie noble)
hosts_key() { { sha256sum scripts/hosts-image.sh; echo "$1"; } | sha256sum | cut -d' ' -f1; }
hosts_present() { # $1 = suite
  [[ -f $hosts_dir/$1.img && -f $hosts_dir/$1.vmlinuz && -f $hosts_dir/$1.initrd ]] &&
    [[ "$(cat "$hosts_dir/$1.key" 2>/dev/null)" == "$(hosts_key "$1")" ]]
}

case "$set_" in
run | demo) pkgs=("${run_pkgs[@]}") ;;
test) pkgs=("${test_pkgs[@]}") ;;
hosts) pkgs=("${hosts_pkgs[@]}") ;;
*)
  echo "deps: unknown set $set_ (want run, demo, test or hosts)" >&2
  exit 2
  ;;
esac

have_apt() { command -v apt-get >/dev/null && command -v dpkg-query >/dev/null; }

# missing_pkgs prints the Debian packages of the set that are not installed.
missing_pkgs() {
  local p
  for p in "${pkgs[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" == installed ]] || echo "$p"
  done
}

kernel_pkg() { apt-cache depends linux-image-amd64 </dev/null 2>/dev/null | awk '/Depends: linux-image/{print $2; exit}'; }

kernel_present() { compgen -G "$kernel_cache/linux-image-*.deb" >/dev/null; }

agents_present() { bash .ci/npm-agents.sh --check >/dev/null 2>&1; }

# check prints one line per missing thing and fails when there is any.
check() {
  local miss=0
  if ! command -v go >/dev/null; then
    echo "go (Go 1.26 from https://go.dev/dl; Debian's golang package is too old)"
    miss=1
  fi
  if [[ "$(uname -s)" != Linux ]]; then
    return $miss # macOS and the BSDs need nothing else from a package manager for these sets
  fi
  if have_apt; then
    local m
    m=$(missing_pkgs)
    if [[ -n "$m" ]]; then
      echo "$m" | sed 's/$/ (Debian package)/'
      miss=1
    fi
  else
    local c
    for c in bwrap; do command -v "$c" >/dev/null || { echo "$c (the bubblewrap package)"; miss=1; }; done
  fi
  if [[ "$set_" == test ]]; then
    kernel_present || { echo "Debian's kernel package in $kernel_cache (for the vm tests)"; miss=1; }
    command -v node >/dev/null || { echo "nodejs and npm (Debian packages)"; miss=1; }
    agents_present || { echo "the pinned agent CLIs under ${ANET_TEST_AGENTS_DIR:-/opt/anet-test-agents}"; miss=1; }
  fi
  if [[ "$set_" == test || "$set_" == hosts ]]; then
    local suite
    for suite in "${hosts_suites[@]}"; do
      hosts_present "$suite" || { echo "the hosts rig's $suite image in $hosts_dir (built by scripts/hosts-image.sh)"; miss=1; }
    done
  fi
  return $miss
}

install() {
  if [[ "$(uname -s)" != Linux ]]; then
    return 0
  fi
  if ! have_apt; then
    echo "deps: this is not a Debian or Ubuntu host; install the packages named above with its package manager" >&2
    return 1
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "deps: installing needs root; run this, then the make command again:" >&2
    if [[ "$set_" == test ]]; then
      echo "  sudo make deps" >&2
    elif [[ "$set_" == hosts ]]; then
      echo "  sudo bash scripts/deps.sh install hosts" >&2
    else
      echo "  sudo apt-get install -y $(missing_pkgs | tr '\n' ' ')" >&2
    fi
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  local extra=()
  [[ "$set_" == test ]] && ! command -v node >/dev/null && extra=(nodejs npm)
  echo "deps: apt-get install ${pkgs[*]} ${extra[*]}"
  apt-get update -qq </dev/null
  apt-get install -y -qq --no-install-recommends "${pkgs[@]}" "${extra[@]}" </dev/null >/dev/null
  if [[ "$set_" == test ]]; then
    if ! kernel_present; then
      local k
      k=$(kernel_pkg)
      [[ -n "$k" ]] || { echo "deps: apt knows no linux-image-amd64 kernel package for the vm tests" >&2; return 1; }
      mkdir -p "$kernel_cache" && chmod 755 "$kernel_cache"
      echo "deps: apt-get download $k into $kernel_cache"
      (cd "$kernel_cache" && apt-get download "$k" </dev/null >/dev/null 2>&1) ||
        { echo "deps: could not download the guest kernel package $k for the vm tests" >&2; return 1; }
      chmod 644 "$kernel_cache"/"$k"_*.deb
    fi
    bash .ci/npm-agents.sh </dev/null
  fi
  if [[ "$set_" == test || "$set_" == hosts ]]; then
    local suite
    for suite in "${hosts_suites[@]}"; do
      hosts_present "$suite" || bash scripts/hosts-image.sh "$hosts_dir" "$(hosts_key "$suite")" "$suite" </dev/null || return 1
    done
  fi
}

case "$mode" in
check) check ;;
ensure)
  if ! out=$(check); then
    echo "deps: make $set_ needs what is missing here:"
    printf '%s\n' "$out" | sed 's/^/  - /'
    if [[ "$out" == *"go (Go"* ]]; then
      echo "deps: install Go first; nothing else is tried" >&2
      exit 1
    fi
    install
    out=$(check) || {
      echo "deps: still missing:" >&2
      printf '  - %s\n' "$out" >&2
      exit 1
    }
  fi
  ;;
install) install ;;
*)
  echo "usage: deps.sh check|ensure|install run|demo|test|hosts" >&2
  exit 2
  ;;
esac
