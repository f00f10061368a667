#!/bin/bash
# The launch, measured side by side in the guest (S6, C4): make bench-compare's launch section
# (internal/benchcompare, built on the host with its empty Go pid 1, since the guest has no Go)
# run twice as op: from the unit's anet-service, where the node's launcher makes each run's
# cgroup in the delegated subtree and starts bwrap into it (clone3), and from op's own session,
# where each run gets a systemd scope. Each run puts the node's launch beside hardened bwrap and
# hardened bwrap with an empty Go pid 1 (the floor of any Go init) in the same run, as ratios.
# The figures are recorded (rig: note lines, and the whole tables in the log), not asserted:
# speed is never a timed assertion, and under TCG only the ratios mean anything.
# sandbox-runtime, the other anchor (the Makefile's pin, npm-installed on the host), runs with
# the agents' Node copied in, and ripgrep and socat from the image.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
bench=$ANET_RIG_WORK/bench
mkdir -p "$bench"
cp "$ANET_RIG_SHARE/tools/benchcompare" "$ANET_RIG_SHARE/tools/gopid1" "$bench/"
chmod 755 "$bench" "$bench"/*
install -m 755 "$ANET_RIG_SHARE/tools/node" /usr/local/bin/node
mkdir -p "$bench/anchors/srt"
tar -C "$bench/anchors/srt" -xf "$ANET_RIG_SHARE/tools/srt.tar" || fail "unpack sandbox-runtime"
chmod -R a+rX "$bench/anchors"
for c in rg socat bwrap; do command -v $c >/dev/null || fail "$c, which sandbox-runtime needs, is not in the image"; done
say "sandbox-runtime $(json_get 'j["version"]' <"$bench/anchors/srt/node_modules/@anthropic-ai/sandbox-runtime/package.json") with node $(node --version)"
rounds=${ANET_RIG_BENCH_ROUNDS:-9}
args=(-only launch -bin /usr/libexec/anet -gopid1 "$bench/gopid1" -anchors "$bench/anchors" -rounds "$rounds")

# measure WHERE RUNNER… runs the bench through RUNNER and prints its table, kept in
# /tmp/bench-WHERE.txt.
measure() {
  local where=$1
  shift
  say "the launch bench, $where ($rounds rounds)"
  "$@" "$bench/benchcompare" "${args[@]}" >/tmp/bench-"$where".txt 2>&1 || fail "the bench $where: $(tail -20 /tmp/bench-"$where".txt)"
  cat /tmp/bench-"$where".txt
}
mech_of() { grep -o '^# launch: cgroup limits by [^(]*' /tmp/bench-"$1".txt | sed 's/^# launch: cgroup limits by //; s/ *$//'; }
# line WHERE TEXT prints the table's line that starts with TEXT.
line() { grep -F -- "$2" /tmp/bench-"$1".txt | head -1; }

measure delegated in_service
[[ "$(mech_of delegated)" == "cgroup v2 delegated" ]] || fail "from anet-service the bench's launcher used '$(mech_of delegated)', want cgroup v2 delegated"
measure scope as_op
[[ "$(mech_of scope)" == "systemd scope" ]] || fail "from op's session the bench's launcher used '$(mech_of scope)', want systemd scope"

for where in delegated scope; do
  for what in "daemon's launch, probe cached" "daemon's launch ($(mech_of $where)), to the Go floor" "hardened bwrap + empty Go pid 1" "anet-sandboxd exec -- /bin/true" "exec, times faster than sandbox-runtime"; do
    l=$(line "$where" "$what")
    [[ -n "$l" ]] || fail "the $where table has no line '$what'"
    printf 'rig: note: %s: %s\n' "$where" "$(tr -s ' ' <<<"$l")"
  done
done
grep -q "sandbox-runtime.*not installed\|sandbox-runtime.*missing" /tmp/bench-delegated.txt && fail "the bench ran without sandbox-runtime: $(grep sandbox-runtime /tmp/bench-delegated.txt)"
ok "measured: the delegated launch and the systemd-scope launch beside hardened bwrap, the Go floor and sandbox-runtime"
