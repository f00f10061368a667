#!/bin/bash
# The field guide's five tests of the wall, through the installed `anet-sandboxd exec` as op,
# each failing for the right reason (S1–S6, L1): no network (S2), the operator's files unseen
# (S3), system directories read-only (S3), memory killed by the run's cgroup and a fork bomb
# stopped by its task limit (S6), the reason read from what anet-sandboxd prints.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node
sbx=/usr/libexec/anet/anet-sandboxd
# sandboxed CMD… runs CMD in a run as op; its stdout and stderr go to /tmp/c.out and
# /tmp/c.err, its status to $rc. The run's outcome (JSON) goes to /tmp/c.outcome.
sandboxed() {
  rm -f /tmp/c.outcome
  set +e
  as_op "$sbx" exec --outcome /tmp/c.outcome "$@" >/tmp/c.out 2>/tmp/c.err
  rc=$?
  set -e
  printf 'rig: exit %s; stdout: %s; stderr: %s\n' "$rc" "$(head -c 600 /tmp/c.out | tr '\n' '|')" "$(head -c 900 /tmp/c.err | tr '\n' '|')"
  [[ -f /tmp/c.outcome ]] && printf 'rig: outcome: %s\n' "$(cat /tmp/c.outcome)"
  return 0
}

say "the sandbox runs a command at all (else the tests below prove nothing)"
t0=$(now)
sandboxed -- /bin/echo inside
printf 'rig: time: one exec run %s s\n' "$(since "$t0")"
[[ $rc -eq 0 && "$(cat /tmp/c.out)" == inside ]] || fail "echo in the sandbox: exit $rc"
ok "a run starts"

say "1. network: nothing beyond the run's own loopback (S2)"
# A server on the guest's loopback, reachable outside the sandbox, proves the test can tell.
as_op sh -c 'cd /tmp && exec python3 -m http.server --bind 127.0.0.1 18080 >/dev/null 2>&1' &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
wait_for 20 curl -fsS -o /dev/null http://127.0.0.1:18080/ || fail "the guest's loopback server does not answer outside the sandbox"
ok "outside the sandbox http://127.0.0.1:18080/ answers"
sandboxed -- /usr/bin/curl -sS --max-time 10 -o /dev/null http://127.0.0.1:18080/
[[ $rc -eq 7 ]] || fail "curl to the host's loopback from inside: exit $rc, want 7 (could not connect)"
grep -qi "Couldn't connect\|Connection refused\|Failed to connect" /tmp/c.err || fail "curl's error is not a refused connection"
ok "the host's loopback is not the run's: connection refused"
sandboxed -- /usr/bin/curl -sS --max-time 10 -o /dev/null https://example.com/
[[ $rc -eq 6 ]] || fail "curl https://example.com from inside: exit $rc, want 6 (no name resolution)"
ok "https://example.com: could not resolve host"
sandboxed -- /usr/bin/curl -sS --max-time 10 -o /dev/null https://93.184.215.14/
[[ $rc -eq 7 ]] || fail "curl to an IP literal from inside: exit $rc, want 7"
grep -qi "unreachable\|Couldn't connect\|Failed to connect" /tmp/c.err || fail "curl's error to an IP literal is not 'unreachable'"
ok "an IP literal: network unreachable"
# /proc/net/dev lists the links of the reader's network namespace (ip(8) needs netlink, which
# the run's seccomp filter refuses, S4).
sandboxed -- /bin/sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
[[ $rc -eq 0 && "$(cat /tmp/c.out)" == lo ]] || fail "the run's links: $(tr '\n' ' ' </tmp/c.out)"
ok "the run's only link is lo"

say "2. the operator's files: ~/.ssh/id_test is not there (S3)"
as_op sh -c 'umask 077; mkdir -p ~/.ssh && echo rig-secret-4711 >~/.ssh/id_test'
sandboxed -- /bin/cat /home/op/.ssh/id_test
[[ $rc -ne 0 ]] || fail "cat ~/.ssh/id_test succeeded in the sandbox"
grep -q "No such file or directory" /tmp/c.err || fail "cat failed, but not because the file is absent"
grep -q rig-secret-4711 /tmp/c.out /tmp/c.err && fail "the key's text reached the run"
sandboxed -- /bin/sh -c 'echo "HOME=$HOME"; ls -A "$HOME"'
grep -q "HOME=/home/op$" /tmp/c.out && fail "the run's HOME is op's"
ok "op's home is not visible; the run has its own"

say "3. system directories are read-only: touch /etc/x (S3)"
sandboxed -- /usr/bin/touch /etc/x
[[ $rc -ne 0 ]] || fail "touch /etc/x succeeded"
grep -q "Read-only file system" /tmp/c.err || fail "touch /etc/x failed, but not for a read-only file system"
[[ ! -e /etc/x ]] || fail "/etc/x exists on the host"
ok "touch /etc/x: read-only file system"

say "4. memory: 1 GiB in a run limited to 512MiB is killed by the cgroup (S6)"
t0=$(now)
sandboxed --memory 512MiB -- /usr/bin/python3 -c 'b = b"x" * (1 << 30); print("allocated", len(b))'
printf 'rig: time: memory run %s s\n' "$(since "$t0")"
grep -q allocated /tmp/c.out && fail "the run allocated 1 GiB under a 512MiB limit"
[[ $rc -eq 137 ]] || fail "the run exited $rc, want 137 (SIGKILL by the OOM killer)"
grep -q "memory_limit" /tmp/c.err || fail "anet-sandboxd did not name the memory limit (memory_limit)"
grep -q '"limit":"memory_limit"' /tmp/c.outcome || fail "the outcome does not name memory_limit"
ok "killed: memory_limit"

say "5. a fork bomb is stopped by the task limit (S6)"
# Every process forks again and again; one whose fork is refused stops forking, waits a
# moment and exits, so the bomb ends by itself once the limit holds it (and grows without
# end where none does, until the wall clock stops it: then the reason is wall_clock).
bomb='import os, sys, time
for _ in range(16):
    try:
        os.fork()
    except OSError as e:
        if e.errno == 11: sys.stderr.write("fork refused: %s\n" % e.strerror)
        break
time.sleep(2)'
t0=$(now)
sandboxed --tasks 64 --timeout 60s -- /usr/bin/python3 -c "$bomb"
printf 'rig: time: fork bomb run %s s\n' "$(since "$t0")"
grep -q "fork refused: Resource temporarily unavailable" /tmp/c.err || fail "no fork was refused"
grep -q "tasks_limit" /tmp/c.err || fail "anet-sandboxd did not name the task limit (tasks_limit)"
grep -q '"limit":"tasks_limit"' /tmp/c.outcome || fail "the outcome does not name tasks_limit"
ok "stopped: tasks_limit"
say "nothing of the runs is left: $(ls /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice 2>/dev/null | grep -c anet-run- || true) run scopes"
