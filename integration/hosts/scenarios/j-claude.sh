#!/bin/bash
# Two nodes on the guest's loopback exchange a task, and the real claude CLI answers it in op's
# sandbox through the installed release build (C4, E1, E2, S2, S5, F3): op2's node (the
# system template) sends; op's node (the user unit, auto_reply agent claude, untrusted peers
# sandboxed) answers. api.anthropic.com is the rig's stand-in on the guest's 127.0.0.1:443:
# an /etc/hosts line sends the name there and its CA is in the guest's system store
# (update-ca-certificates), so anet-egress reaches it by name over TLS it verifies as it
# would the real service. No test hook is in any binary under test. Then kill -9 of op's
# anet-sandboxd while a second task's run waits on its model call: the run's processes end
# with their helper, anetd restarts it, no run cgroup is left, op2 is told the outcome, and
# both evidence chains verify (S1, S6, C3, F1).
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_installed
[[ -x "$ANET_RIG_SHARE/tools/standin" && -x "$ANET_RIG_SHARE/tools/claude" ]] ||
  fail "the share has no tools/standin or tools/claude (the test copies them in)"

say "the claude CLI, installed as npm installs it: a native program in a root-owned tree"
install -D -m 755 "$ANET_RIG_SHARE/tools/claude" /usr/local/lib/claude-code/bin/claude.exe
ln -sf /usr/local/lib/claude-code/bin/claude.exe /usr/local/bin/claude
timed "claude --version (outside any sandbox)" as_op claude --version || fail "claude --version"

say "the stand-in api.anthropic.com on 127.0.0.1:443, its CA in the system store"
key="sk-ant-rig-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && printf '%s\n' "$key" >/root/standin.key)
answer="rig-claude-answer-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
ca=/usr/local/share/ca-certificates/anet-rig-standin.crt
rm -f "$ca" /tmp/standin.json /tmp/standin.stall
"$ANET_RIG_SHARE/tools/standin" -listen 127.0.0.1:443 -ca "$ca" -key-file /root/standin.key \
  -answer "$answer" -report /tmp/standin.json -stall /tmp/standin.stall 2>/tmp/standin.err &
standin=$!
trap 'kill "$standin" 2>/dev/null || true' EXIT
wait_for 30 test -s "$ca" || fail "the stand-in did not start: $(cat /tmp/standin.err)"
update-ca-certificates >/dev/null 2>&1 || fail "update-ca-certificates"
grep -q ' api.anthropic.com$' /etc/hosts || echo '127.0.0.1 api.anthropic.com' >>/etc/hosts
# What a release build sees: the name resolves from /etc/hosts and the certificate verifies
# against the system store, with nothing passed to the client.
python3 - <<'EOF' || fail "api.anthropic.com:443 does not verify against the system store"
import socket, ssl
c = ssl.create_default_context().wrap_socket(socket.create_connection(("api.anthropic.com", 443), 10), server_hostname="api.anthropic.com")
print("rig: TLS to api.anthropic.com:", c.version(), "verified, peer", c.getpeername()[0])
EOF
ok "api.anthropic.com is the stand-in at 127.0.0.1:443, verified through the system store"

say "op's node answers with claude; untrusted peers run in the sandbox"
ensure_op_node
as_op sh -c 'umask 022; printf "%s\n" "auto_reply:" "  agent: claude" "  untrusted: sandbox" "  api_timeout_seconds: 480" >~/.config/anet/config.yaml'
# The key travels on stdin, never in an argv another user could read.
as_op sh -c 'umask 077; printf "anthropic: %s\n" "$(cat)" >~/.config/anet/keys.yaml' </root/standin.key
timed "systemctl --user restart anetd" as_op systemctl --user restart anetd || fail "restart op's node"
wait_for 60 as_op anet status || fail "op's node does not answer after its restart"
ensure_op2_node

say "the nodes learn each other (anet peer add); op does not trust op2"
as_op anet status --json >/tmp/s1.json
as_op2 anet status --json >/tmp/s2.json
aid1=$(json_get 'j["aid"]' </tmp/s1.json) addr1=$(json_get 'j["listen_addr"]' </tmp/s1.json)
aid2=$(json_get 'j["aid"]' </tmp/s2.json) addr2=$(json_get 'j["listen_addr"]' </tmp/s2.json)
[[ -n "$aid1" && -n "$addr1" && -n "$aid2" && -n "$addr2" ]] || fail "a node has no AID or peer listener: $(cat /tmp/s1.json /tmp/s2.json)"
as_op anet peer add "$aid2" "$addr2" >/dev/null || fail "op: anet peer add"
as_op2 anet peer add "$aid1" "$addr1" >/dev/null || fail "op2: anet peer add"
ok "op $aid1 at $addr1, op2 $aid2 at $addr2"

say "op2 sends op a task (anet send); op's claude answers it in the sandbox"
t0=$(now)
id=$(as_op2 anet send --to "$aid1" "Reply with the agreed token and nothing else.") || fail "op2: anet send"
id=$(printf '%s' "$id" | tr -d '[:space:]')
got=
until [[ -n "$got" ]]; do
  (($(date +%s) - ${t0%.*} < 540)) || {
    as_op anet status || true
    fail "no answer to $id after 540 s"
  }
  sleep 2
  as_op2 anet show --json "$id" >/tmp/out.json || continue
  got=$(json_get '(j.get("answer") or {}).get("type","")' </tmp/out.json)
done
printf 'rig: time: %s %s s\n' "task sent, answer back" "$(since "$t0")"
as_op anet show --json "$id" >/tmp/in.json || fail "op: anet show $id"
[[ "$got" == reply ]] || fail "op2 got a $got: $(json_get 'j["answer"]' </tmp/out.json); op's run log: $(json_get 'j.get("run_logs")' </tmp/in.json)"
text=$(json_get 'j["answer"]["text"]' </tmp/out.json)
[[ "$text" == *"$answer"* ]] || fail "the reply is not the stand-in's answer: $text"
route=$(json_get '",".join(r["route"] for r in j.get("runs",[]))' </tmp/in.json)
[[ "$route" == sandbox* ]] || fail "op's run took route $route, want the sandbox: $(cat /tmp/in.json)"
ok "op2 has claude's reply, made in op's sandbox (route $route): $text"

say "kill -9 of anet-sandboxd during a run of the node's own: the run ends with it, nothing is left, op2 is answered (S1, S6, C3, F1)"
sbx=/usr/libexec/anet/anet-sandboxd
unit=/sys/fs/cgroup$(as_op systemctl --user show anetd -p ControlGroup --value)
leaves() { find "$unit" -mindepth 1 -maxdepth 1 -type d -name 'anet-run-*' -printf '%f\n' | sort; }
has_leaf() { [[ -n "$(leaves)" ]]; }
no_leaves() { [[ -z "$(leaves)" ]]; }
serve=$(pgrep -u op -f "^$sbx serve" | head -1)
[[ -n "$serve" ]] || fail "op's anet-sandboxd serve is not running"
# While the stall file is there the stand-in holds its answers: the run is surely in its
# model call when the helper is killed.
touch /tmp/standin.stall
id2=$(as_op2 anet send --to "$aid1" "Reply with the agreed token once more.") || fail "op2: anet send"
id2=$(printf '%s' "$id2" | tr -d '[:space:]')
wait_for 240 has_leaf || fail "no run of op's node started for $id2: $(as_op anet status)"
leaf=$unit/$(leaves | head -1)
in_model_call() { [[ $(grep -c 'a streamed Messages request' /tmp/standin.err) -ge 2 ]]; }
wait_for 240 in_model_call || fail "the second run made no model call: $(as_op anet status)"
run=$(cat "$leaf/cgroup.procs" | tr '\n' ' ')
[[ -n "$run" ]] || fail "$leaf holds no process"
say "the run's processes in $leaf: $run; kill -9 anet-sandboxd serve ($serve)"
kill -9 "$serve"
gone() { for p in $run; do [[ -d /proc/$p ]] && return 1; done; return 0; }
wait_for 15 gone || fail "run processes outlive anet-sandboxd: $(for p in $run; do [[ -d /proc/$p ]] && tr '\0' ' ' </proc/$p/cmdline; echo; done)"
ok "the run ($run) ended with its helper"
wait_for 60 sh -c "pgrep -u op -f '^$sbx serve' | grep -vx $serve" || fail "anetd did not restart anet-sandboxd"
ok "anetd restarted anet-sandboxd ($(pgrep -u op -f "^$sbx serve" | head -1))"
rm -f /tmp/standin.stall
got=
t0=$(now)
until [[ -n "$got" ]]; do
  (($(date +%s) - ${t0%.*} < 420)) || fail "no answer to $id2 after 420 s: $(as_op anet status)"
  sleep 2
  as_op2 anet show --json "$id2" >/tmp/out2.json || continue
  got=$(json_get '(j.get("answer") or {}).get("type","")' </tmp/out2.json)
done
as_op anet show --json "$id2" >/tmp/in2.json || fail "op: anet show $id2 after the crash"
say "op2 got a $got $(json_get '(j["answer"].get("code") or "")' </tmp/out2.json); op's runs: $(json_get '[(r["route"], r.get("counted")) for r in j.get("runs",[])]' </tmp/in2.json)"
# The run died with its helper: op2 learns that no answer comes, with the reason code from the
# catalog that says why (or, had the node run the task again, the reply): never silence.
code2=$(json_get '(j["answer"].get("code") or "")' </tmp/out2.json)
[[ "$got" == reply || ( "$got" == refusal && -n "$code2" ) ]] || fail "after the crash op2 has no usable answer: $(json_get 'j["answer"]' </tmp/out2.json)"
wait_for 30 no_leaves || fail "run leaves are left in $unit: $(leaves | tr '\n' ' ')"
[[ -z "$(pgrep -u op -f claude.exe || true)" ]] || fail "a claude process of op is left: $(pgrep -a -u op -f claude.exe)"
for who in as_op as_op2; do
  $who anet evidence verify >/tmp/v.txt 2>&1 || fail "$who: anet evidence verify after the crash: $(cat /tmp/v.txt)"
done
ok "op2 has its answer after the crash ($got${code2:+ $code2}); no run is left; both chains verify"

say "the stand-in saw the operator's key on every request, and only the pinned model"
kill -TERM "$standin"
wait "$standin" || true
trap - EXIT
[[ -s /tmp/standin.json ]] || fail "the stand-in wrote no report: $(cat /tmp/standin.err)"
say "stand-in: $(cat /tmp/standin.json)"
[[ "$(json_get 'j["messages"]' </tmp/standin.json)" -ge 2 ]] || fail "fewer than two POST /v1/messages reached the stand-in"
[[ "$(json_get 'len(j["problems"])' </tmp/standin.json)" == 0 ]] || fail "the stand-in found problems: $(json_get 'j["problems"]' </tmp/standin.json)"
ok "$(json_get 'j["messages"]' </tmp/standin.json) Messages request(s), every one with the operator's key"

say "the key is in no log: op's journal, the run's log, anet show"
if journalctl --user-unit anetd -M op@ --no-pager 2>/dev/null | grep -qF "$key" ||
  journalctl _UID="$(id -u op)" --no-pager | grep -qF "$key" || grep -qF "$key" /tmp/in.json /tmp/out.json; then
  fail "the operator's key appears in a log or an answer (F3)"
fi
ok "the operator's key is in no log"

