#!/bin/bash
# The packaged user unit delegates its cgroup (Delegate=memory pids) and the node limits every
# run through it, with no systemd-run per launch (S6, S1, L1, C3, C4, F2): at its start
# anet-sandboxd moves the unit's processes (anetd and both helpers) into the child anet-service
# and enables memory and pids for the children; status and doctor say "cgroup v2 delegated"
# and name the subtree; a run is born in its own child anet-run-ID (bwrap's cgroup is the leaf,
# and the run's cgroup namespace is rooted there); the memory limit holds; nothing of a run is
# left; kill -9 of a launcher leaves no run process, and the helper that anetd restarts sweeps
# the leaf it left; a reload still works on the divided cgroup. A launcher started by op
# outside the unit, and a node started by hand under op's user manager, are not in a delegated
# subtree: they get a systemd scope per run, and doctor says why.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node
sbx=/usr/libexec/anet/anet-sandboxd
uid=$(id -u op)
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"

say "the unit delegates, and its cgroup is divided: the unit's processes in anet-service"
[[ "$(as_op systemctl --user show anetd -p Delegate --value)" == yes ]] || fail "anetd.service has no Delegate="
unit=/sys/fs/cgroup$(as_op systemctl --user show anetd -p ControlGroup --value)
svc=$unit/anet-service
[[ -d $svc ]] || fail "$svc does not exist: ls $unit: $(ls "$unit" | tr '\n' ' ')"
[[ -z "$(cat "$unit/cgroup.procs")" ]] || fail "$unit holds processes of its own: $(cat "$unit/cgroup.procs" | tr '\n' ' ')"
for c in memory pids; do
  grep -qw $c "$unit/cgroup.subtree_control" || fail "$unit/cgroup.subtree_control lacks $c: $(cat "$unit/cgroup.subtree_control")"
done
main=$(as_op systemctl --user show anetd -p MainPID --value)
serve=$(pgrep -u op -f "^$sbx serve" | head -1)
egress=$(pgrep -u op -f '^/usr/libexec/anet/anet-egress serve' | head -1)
for p in "$main" "$serve" "$egress"; do
  [[ -n "$p" ]] || fail "anetd, anet-sandboxd serve or anet-egress serve is not running"
  grep -qx "0::${svc#/sys/fs/cgroup}" /proc/"$p"/cgroup || fail "pid $p ($(tr '\0' ' ' </proc/"$p"/cmdline)) is in $(cat /proc/"$p"/cgroup)"
done
ok "anetd $main, anet-sandboxd $serve and anet-egress $egress in $svc; memory and pids enabled below $unit"

say "anet doctor: limits full, cgroup v2 delegated, the subtree named"
as_op anet doctor --json >/tmp/d.json || true
mech=$(json_get 'j.get("mechanism","")' </tmp/d.json)
limits=$(json_get 'j.get("limits","")' </tmp/d.json)
detail=$(json_get '[c.get("detail","") for c in j["checks"] if c["name"]=="node.limits"][0]' </tmp/d.json)
say "doctor: limits '$limits', mechanism '$mech', node.limits: $detail"
[[ "$limits" == full && "$mech" == "cgroup v2 delegated" ]] || fail "doctor: limits '$limits' by '$mech', want full by cgroup v2 delegated"
[[ "$detail" == *"delegated cgroup v2 subtree $unit"* ]] || fail "doctor's limits check does not name the subtree $unit"
ok "doctor: full, cgroup v2 delegated, $unit"

leaves() { find "$unit" -mindepth 1 -maxdepth 1 -type d -name 'anet-run-*' -printf '%f\n' | sort; }
# new_leaf BEFORE prints the leaf that is not in the list BEFORE; has_new_leaf BEFORE says
# whether there is one (wait_for runs its arguments again each time: a function, so that
# they are read anew).
new_leaf() { comm -13 <(echo "$1") <(leaves) | grep . | head -1; }
has_new_leaf() { [[ -n "$(new_leaf "$1")" ]]; }
no_leaves() { [[ -z "$(leaves)" ]]; }
# bwrap_in LEAF prints the pid of the bwrap in LEAF that anet-sandboxd started: the run's
# first process.
bwrap_in() {
  local p
  for p in $(cat "$1/cgroup.procs"); do
    if [[ "$(readlink /proc/"$p"/exe 2>/dev/null)" == */bwrap && "$(ps -o comm= -p "$(ps -o ppid= -p "$p" | tr -d ' ')")" == anet-sandboxd ]]; then
      echo "$p"
      return
    fi
  done
}
scopes() { as_op systemctl --user list-units --all --plain --no-legend 'anet-run-*.scope' | awk '{print $1}'; }
has_scope() { [[ -n "$(scopes)" ]]; }

say "a launcher in the unit's subtree chooses it too (anet-sandboxd probe, from anet-service)"
in_service "$sbx" probe --json >/tmp/p.json || fail "anet-sandboxd probe failed: $(cat /tmp/p.json)"
[[ "$(json_get 'j.get("mechanism","")' </tmp/p.json)" == "cgroup v2 delegated" ]] ||
  fail "probe from anet-service: mechanism '$(json_get 'j.get("mechanism","")' </tmp/p.json)' ($(json_get 'j.get("mechanism_detail","")' </tmp/p.json))"
ok "probe: $(json_get 'j["mechanism"] + ", " + j.get("limits","")' </tmp/p.json)"

say "a run is in its own cgroup from its first instruction, with no systemd scope"
before=$(leaves)
in_service "$sbx" exec -- /bin/sh -c 'cat /proc/self/cgroup; exec sleep 8' >/tmp/r.out 2>/tmp/r.err &
job=$!
wait_for 20 has_new_leaf "$before" || fail "no anet-run-* leaf appeared under $unit: $(cat /tmp/r.err)"
leaf=$unit/$(new_leaf "$before")
wait_for 20 grep -q . /tmp/r.out || fail "the run printed nothing: $(cat /tmp/r.err)"
say "leaf $leaf: memory.max $(cat "$leaf/memory.max"), memory.swap.max $(cat "$leaf/memory.swap.max" 2>/dev/null || echo -), pids.max $(cat "$leaf/pids.max")"
[[ "$(cat "$leaf/memory.max")" == 2147483648 && "$(cat "$leaf/pids.max")" == 256 ]] || fail "the leaf's limits are not S6's defaults"
[[ ! -e "$leaf/memory.swap.max" || "$(cat "$leaf/memory.swap.max")" == 0 ]] || fail "memory.swap.max is $(cat "$leaf/memory.swap.max"), want 0"
bw=$(bwrap_in "$leaf")
[[ -n "$bw" ]] || fail "no bwrap started by anet-sandboxd in $leaf: $(cat "$leaf/cgroup.procs" | tr '\n' ' ')"
grep -qx "0::${leaf#/sys/fs/cgroup}" /proc/"$bw"/cgroup || fail "bwrap $bw is in $(cat /proc/"$bw"/cgroup)"
[[ "$(grep '^0::' /tmp/r.out)" == "0::/" ]] || fail "the run sees its cgroup as '$(cat /tmp/r.out)', want 0::/ (its namespace rooted at the leaf, where bwrap was born)"
[[ -z "$(scopes)" ]] || fail "a systemd scope exists for the run: $(scopes)"
ok "bwrap $bw (the run's first process, started by anet-sandboxd) is in $leaf; the run's cgroup namespace is rooted there; no scope"
wait "$job" || fail "the run failed: $(cat /tmp/r.err)"

say "the memory limit holds: 1 GiB in a run limited to 512MiB is killed (S6)"
set +e
in_service "$sbx" exec --memory 512MiB --outcome /tmp/m.outcome -- /usr/bin/python3 -c 'b = b"x" * (1 << 30); print("allocated", len(b))' >/tmp/m.out 2>/tmp/m.err
rc=$?
set -e
say "exit $rc; stderr: $(tr '\n' '|' </tmp/m.err); outcome: $(cat /tmp/m.outcome 2>/dev/null)"
grep -q allocated /tmp/m.out && fail "the run allocated 1 GiB under 512MiB"
[[ $rc -eq 137 ]] || fail "the run exited $rc, want 137"
grep -q memory_limit /tmp/m.err || fail "anet-sandboxd did not name memory_limit"
grep -q '"limit":"memory_limit"' /tmp/m.outcome || fail "the outcome does not name memory_limit"
ok "killed: memory_limit"

say "after the runs nothing is left under $unit but anet-service"
wait_for 10 no_leaves || fail "leaves left: $(leaves | tr '\n' ' ')"
left=$(find "$unit" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | grep -vx anet-service || true)
[[ -z "$left" ]] || fail "left under $unit: $left"
ok "only anet-service"

say "kill -9 of a launcher in the subtree during a long run leaves no run process"
before=$(leaves)
in_service "$sbx" exec -- /bin/sh -c 'echo started; exec sleep 300' >/tmp/k.out 2>/tmp/k.err &
job=$!
wait_for 20 grep -q started /tmp/k.out || fail "the long run did not start: $(cat /tmp/k.err)"
leaf=$unit/$(new_leaf "$before")
run=$(cat "$leaf/cgroup.procs" | tr '\n' ' ')
[[ -n "$run" ]] || fail "$leaf holds no process"
bw=$(bwrap_in "$leaf")
launcher=$(ps -o ppid= -p "$bw" | tr -d ' ')
[[ "$(tr '\0' ' ' </proc/"$launcher"/cmdline)" == "$sbx exec "* ]] || fail "bwrap's parent $launcher is $(tr '\0' ' ' </proc/"$launcher"/cmdline)"
kill -9 "$launcher"
wait "$job" 2>/dev/null || true
gone() { for p in $run; do [[ -d /proc/$p ]] && return 1; done; return 0; }
wait_for 10 gone || fail "run processes outlive their launcher: $(for p in $run; do [[ -d /proc/$p ]] && tr '\0' ' ' </proc/$p/cmdline; echo; done)"
[[ -z "$(cat "$leaf/cgroup.procs")" ]] || fail "$leaf still holds $(cat "$leaf/cgroup.procs")"
[[ -d $leaf ]] || fail "$leaf is gone already (the next start's sweep was to remove it)"
ok "the run ($run) ended with its launcher; the empty leaf $leaf is left"

say "kill -9 of the unit's anet-sandboxd: anetd restarts it, and its start sweeps the leaf"
kill -9 "$serve"
wait_for 60 sh -c "pgrep -u op -f '^$sbx serve' | grep -vx $serve" || fail "anetd did not restart anet-sandboxd"
serve=$(pgrep -u op -f "^$sbx serve" | head -1)
grep -qx "0::${svc#/sys/fs/cgroup}" /proc/"$serve"/cgroup || fail "the restarted anet-sandboxd is in $(cat /proc/"$serve"/cgroup)"
wait_for 20 test ! -d "$leaf" || fail "$leaf was not swept by the restarted helper"
as_op anet doctor --json >/tmp/d.json || true
[[ "$(json_get 'j.get("mechanism","")' </tmp/d.json)" == "cgroup v2 delegated" ]] || fail "after the restart doctor says '$(json_get 'j.get("mechanism","")' </tmp/d.json)'"
ok "anet-sandboxd $serve restarted in anet-service, the leaf swept, still cgroup v2 delegated"

say "a reload works on the divided cgroup (systemd starts ExecReload in its own child, .control)"
as_op systemctl --user reload anetd || fail "systemctl --user reload anetd: $(as_op systemctl --user status anetd --no-pager | tail -5)"
[[ "$(as_op systemctl --user is-active anetd)" == active ]] || fail "anetd is not active after the reload"
ok "reloaded; under $unit: $(find "$unit" -mindepth 1 -maxdepth 1 -type d -printf '%f ')"

say "a restart makes the unit's cgroup anew and divides it again; anet status --json names the mechanism"
cp /home/op/.config/anet/config.yaml /tmp/config.yaml.orig
# A sandboxed back-end, so that status probes the sandbox (the agent need not be installed).
as_op sh -c 'umask 022; printf "%s\n" "auto_reply:" "  backend: exec" "  untrusted: sandbox" >/home/op/.config/anet/config.yaml'
as_op systemctl --user restart anetd || fail "systemctl --user restart anetd: $(as_op systemctl --user status anetd --no-pager | tail -5)"
wait_for 60 as_op anet status || fail "anet status after the restart"
wait_for 20 test -d "$svc" || fail "$svc was not made again after the restart"
[[ -z "$(cat "$unit/cgroup.procs")" ]] || fail "$unit holds processes after the restart"
status_mech() { as_op anet status --json | json_get 'j["auto_reply"]["sandbox"].get("mechanism","")'; }
status_v2() { [[ "$(status_mech)" == "cgroup v2 delegated" ]]; }
wait_for 30 status_v2 || fail "status: $(as_op anet status --json | json_get 'j["auto_reply"]["sandbox"]')"
ok "status: $(as_op anet status --json | json_get 'j["auto_reply"]["sandbox"]["limits"] + " (" + j["auto_reply"]["sandbox"]["mechanism"] + ")"')"
cp /tmp/config.yaml.orig /home/op/.config/anet/config.yaml
chown op: /home/op/.config/anet/config.yaml
as_op systemctl --user restart anetd || fail "restart with the original configuration"
wait_for 60 as_op anet status || fail "anet status after the second restart"

say "a launcher op starts outside the unit is in no delegated subtree: a systemd scope per run"
as_op "$sbx" probe --json >/tmp/p.json || fail "anet-sandboxd probe as op failed: $(cat /tmp/p.json)"
say "probe: $(json_get 'j.get("mechanism","") + ": " + j.get("mechanism_detail","")' </tmp/p.json)"
[[ "$(json_get 'j.get("mechanism","")' </tmp/p.json)" == "systemd scope" ]] || fail "outside the unit the mechanism is not a systemd scope"
as_op "$sbx" exec -- /bin/sh -c 'cat /proc/self/cgroup; exec sleep 5' >/tmp/s.out 2>/tmp/s.err &
job=$!
wait_for 20 has_scope || fail "no anet-run-*.scope while the run runs: $(cat /tmp/s.err)"
sc=$(scopes | head -1)
wait_for 20 grep -q . /tmp/s.out || fail "the run printed nothing: $(cat /tmp/s.err)"
[[ "$(grep '^0::' /tmp/s.out)" == "0::/" ]] || fail "the scope's run sees '$(cat /tmp/s.out)'"
say "scope $sc: MemoryMax $(as_op systemctl --user show "$sc" -p MemoryMax --value), TasksMax $(as_op systemctl --user show "$sc" -p TasksMax --value)"
wait "$job" || fail "the scope's run failed: $(cat /tmp/s.err)"
ok "run in $sc"

say "launch times, for the record (no aim: a guest's clock, maybe emulated): /bin/true through exec, three each"
for i in 1 2 3; do
  timed "exec /bin/true, cgroup v2 delegated (clone3 into the leaf)" in_service "$sbx" exec -- /bin/true || fail "exec /bin/true in the subtree"
  timed "exec /bin/true, systemd scope (systemd-run per launch)" as_op "$sbx" exec -- /bin/true || fail "exec /bin/true in a scope"
done

say "a node started by hand under op's user manager (in a scope, as from a terminal): systemd scope, and doctor says why"
as_op systemctl --user stop anetd
as_op systemd-run --user --scope --quiet --unit=anetd-by-hand /usr/bin/anetd --helper-dir /usr/libexec/anet >/tmp/h.log 2>&1 &
job=$!
wait_for 60 as_op anet status || fail "the node started by hand does not answer: $(tail -5 /tmp/h.log)"
as_op anet doctor --json >/tmp/d.json || true
mech=$(json_get 'j.get("mechanism","")' </tmp/d.json)
detail=$(json_get '[c.get("detail","") for c in j["checks"] if c["name"]=="node.limits"][0]' </tmp/d.json)
say "doctor: '$mech': $detail"
[[ "$mech" == "systemd scope" ]] || fail "by hand: mechanism '$mech', want systemd scope"
# The scope is not delegated: judged by the user manager's answer, or before it by the
# controllers the scope lacks.
[[ "$detail" == *"anetd-by-hand.scope, which the user manager does not delegate"* ||
  "$detail" == *"anetd-by-hand.scope lacks the memory and pids controllers"* ]] || fail "doctor does not say why the scope was not used"
[[ ! -d "/sys/fs/cgroup$(as_op systemctl --user show anetd-by-hand.scope -p ControlGroup --value)/anet-service" ]] ||
  fail "the hand-started node divided its terminal's scope"
ok "by hand: systemd scope, the terminal's scope left whole"
as_op systemctl --user stop anetd-by-hand.scope || true
wait "$job" || true
as_op systemctl --user start anetd || fail "systemctl --user start anetd"
wait_for 60 as_op anet status || fail "anet status after restarting the unit"
ok "the unit runs again"
