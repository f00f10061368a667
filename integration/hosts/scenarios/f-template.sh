#!/bin/bash
# The system template anetd@.service runs op2's node under the system manager (C4): enabled
# and started, it answers `anet status` at the runtime dir the README names, and its
# hardening does not break a sandboxed run: `anet doctor` as op2 passes the sandbox probe
# (S7, S8, F2).
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_installed

say "op2's node: the system template, its own peer port, the openai back-end and a placeholder key"
ensure_op2_node
[[ "$(systemctl is-active anetd@op2.service)" == active ]] || fail "anetd@op2 is $(systemctl is-active anetd@op2.service)"
[[ "$(systemctl show anetd@op2.service -p User --value)" == op2 ]] || fail "anetd@op2 does not run as op2"
ok "anetd@op2 active as $(ps -o user= -p "$(systemctl show anetd@op2.service -p MainPID --value)")"
as_op2 anet status
say "anet doctor as op2: the probe passes under the hardened unit"
set +e
timed "anet doctor (op2)" as_op2 anet doctor
rc=$?
set -e
as_op2 anet doctor --json >/tmp/doctor2.json || true
bad=$(json_get '[c["name"] + ": " + c.get("code","") + " " + c.get("detail","") for c in j["checks"] if c["name"].startswith("probe.") and not c["ok"]]' </tmp/doctor2.json)
[[ "$bad" == "[]" ]] || fail "probe checks failed under anetd@op2: $bad"
json_get '[c["name"] for c in j["checks"] if c["name"].startswith("probe.")]' </tmp/doctor2.json | grep -q probe || fail "doctor reported no probe checks"
say "op2's limits: $(json_get 'j.get("limits","")' </tmp/doctor2.json) ($(json_get 'j.get("mechanism","")' </tmp/doctor2.json)), doctor exit $rc"
ok "the sandbox probe passes under the system template's hardening"
[[ $rc -eq 0 ]] || fail "anet doctor as op2 exited $rc"
