#!/usr/bin/env bash
# Installs the real agent CLIs the integration tests run inside the sandbox (E1–E11,
# P1), at pinned versions, into one prefix readable by every user (the tests run
# as an unprivileged user and bind the prefix read-only into the sandbox as the agent tree).
# Idempotent: when the pinned versions are already there it only prints them.
#
#   ANET_TEST_AGENTS_DIR  the prefix (default /opt/anet-test-agents); the tests read the same
#                         variable. CLIs end up in $ANET_TEST_AGENTS_DIR/bin.
#
#   --check               install nothing: exit 0 when the pinned versions are there, else 1.
set -euo pipefail

prefix="${ANET_TEST_AGENTS_DIR:-/opt/anet-test-agents}"
# Pinned: pkg/agents records what these exact versions send; bump together with it.
pkgs=(
  "@anthropic-ai/claude-code@2.1.328"
  "@openai/codex@0.169.0"
)

command -v node >/dev/null || { echo "npm-agents: node is not installed (need Node 20+)" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm-agents: npm is not installed" >&2; exit 1; }

installed_version() { # $1 = package name; prints the installed version or nothing
  local pj="$prefix/lib/node_modules/$1/package.json"
  [[ -r "$pj" ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" 2>/dev/null || true
}

missing=()
for spec in "${pkgs[@]}"; do
  name="${spec%@*}" want="${spec##*@}"
  [[ "$(installed_version "$name")" == "$want" ]] || missing+=("$spec")
done

if [[ "${1:-}" == --check ]]; then
  ((${#missing[@]} == 0))
  exit
fi

if ((${#missing[@]})); then
  umask 022
  mkdir -p "$prefix"
  echo "npm-agents: installing ${missing[*]} into $prefix"
  # -g --prefix: modules under $prefix/lib/node_modules, executables under $prefix/bin.
  npm install --global --prefix "$prefix" --no-audit --no-fund --loglevel=error "${missing[@]}" </dev/null
  # The tests run as another user: everything readable, directories searchable.
  chmod -R a+rX "$prefix"
fi

for spec in "${pkgs[@]}"; do
  name="${spec%@*}" want="${spec##*@}"
  got="$(installed_version "$name")"
  if [[ "$got" != "$want" ]]; then
    echo "npm-agents: $name is $got after install, want $want" >&2
    exit 1
  fi
done
for bin in claude codex; do
  [[ -x "$prefix/bin/$bin" ]] || { echo "npm-agents: $prefix/bin/$bin missing" >&2; exit 1; }
done
echo "claude: $("$prefix/bin/claude" --version </dev/null)"
echo "codex: $("$prefix/bin/codex" --version </dev/null)"
