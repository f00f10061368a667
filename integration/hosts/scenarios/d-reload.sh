#!/bin/bash
# A hand edit of the config is applied by `systemctl --user reload anetd` (the unit's
# ExecReload=anetd --reload) without restarting the node (U3): the change shows in
# `anet status`, and anetd's pid is the same.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node

runs() { as_op anet status --json | json_get 'j["budget"]["runs_per_day"]'; }
pid_before=$(as_op systemctl --user show anetd -p MainPID --value)
before=$(runs)
say "anetd pid $pid_before; auto_reply.sandbox.runs_per_day is $before"
want=7
[[ "$before" != "$want" ]] || want=9
say "edit ~op/.config/anet/config.yaml by hand: runs_per_day $want"
as_op python3 - "$want" <<'PY'
import sys, pathlib
p = pathlib.Path.home() / ".config/anet/config.yaml"
lines = [l for l in p.read_text().splitlines() if l.strip()]
if "auto_reply:" not in lines:
    lines.append("auto_reply:")
i = lines.index("auto_reply:")
lines[i + 1:i + 1] = ["  sandbox:", "    runs_per_day: " + sys.argv[1]]
p.write_text("\n".join(lines) + "\n")
PY
cat /home/op/.config/anet/config.yaml
[[ "$(runs)" == "$before" ]] || fail "the edit took effect before any reload"
timed "systemctl --user reload anetd" as_op systemctl --user reload anetd || fail "systemctl --user reload anetd"
after=$(runs)
[[ "$after" == "$want" ]] || fail "after the reload runs_per_day is $after, want $want"
ok "runs_per_day $before -> $after"
pid_after=$(as_op systemctl --user show anetd -p MainPID --value)
[[ "$pid_after" == "$pid_before" ]] || fail "anetd's pid changed: $pid_before -> $pid_after"
[[ "$(as_op systemctl --user is-active anetd)" == active ]] || fail "anetd is not active after the reload"
ok "anetd pid $pid_after unchanged, active"
say "status reports the reload: $(as_op anet status --json | json_get 'j.get("reload")')"

say "an invalid edit is refused by the reload and the old settings stay (U3)"
cp /home/op/.config/anet/config.yaml /tmp/config.good
as_op sh -c 'printf "auto_reply:\n  sandbox:\n    runs_per_day: 010\n" >~/.config/anet/config.yaml'
set +e
as_op systemctl --user reload anetd
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "the reload of an invalid file succeeded"
[[ "$(runs)" == "$want" ]] || fail "the invalid file changed runs_per_day to $(runs)"
[[ "$(as_op systemctl --user is-active anetd)" == active ]] || fail "anetd stopped after an invalid reload"
as_op anet status --json | json_get '[w["code"] for w in j["warnings"]]' | grep -q reload_failed || fail "status does not warn reload_failed"
ok "refused (exit $rc), runs_per_day still $want, reload_failed shown"
as_op cp /tmp/config.good /home/op/.config/anet/config.yaml
as_op systemctl --user reload anetd || fail "the reload of the good file again"
