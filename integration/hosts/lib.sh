# Helpers for the hosts rig's scenarios (sourced: `. "$ANET_RIG_LIB"`). Each scenario stands
# alone: what it needs of the guest (the package installed, op's node running) it asks for
# with an ensure_* function here, which does nothing when an earlier scenario already did it.
# So `make host-test SCENARIO=NAME` runs NAME alone on a fresh guest.

# say prints what the scenario checks now; ok what held; fail ends the scenario.
say() { printf 'rig: %s\n' "$*"; }
ok() { printf 'rig: ok: %s\n' "$*"; }
fail() {
  printf 'rig: FAIL: %s\n' "$*"
  exit 1
}

# now is seconds since the epoch with fractions; since T is the seconds from T to now.
now() { date +%s.%N; }
since() { python3 -c "print(round($(now) - $1, 2))"; }
# timed LABEL CMD… runs CMD and prints how long it took (kept in the scenario's log).
timed() {
  local label=$1 t0 rc
  shift
  t0=$(now)
  "$@"
  rc=$?
  printf 'rig: time: %s %s s\n' "$label" "$(since "$t0")"
  return $rc
}

# as_op CMD… runs CMD as the lingering user op in its user manager's environment: its runtime
# dir and session bus, as a login would give them, from its home.
as_op() {
  (cd /home/op && runuser -u op -- env -i HOME=/home/op USER=op LOGNAME=op SHELL=/bin/bash \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus "$@")
}

# as_op2 CMD… runs CMD as op2, whose node is the system template anetd@op2.service: no user
# manager, and the runtime dir the unit makes (XDG_RUNTIME_DIR=/run/anetd-op2, as the
# README says).
as_op2() {
  (cd /home/op2 && runuser -u op2 -- env -i HOME=/home/op2 USER=op2 LOGNAME=op2 SHELL=/bin/bash \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 XDG_RUNTIME_DIR=/run/anetd-op2 "$@")
}

# json_get EXPR reads JSON on stdin and prints the Python expression EXPR of it (j is the
# document), e.g. json_get 'j["aid"]'.
json_get() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }

# wait_for SECONDS CMD… retries CMD every half second until it succeeds or SECONDS pass.
wait_for() {
  local until=$(($(date +%s) + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    (($(date +%s) < until)) || return 1
    sleep 0.5
  done
}

installed() { [[ "$(dpkg-query -W -f='${db:Status-Status}' anet 2>/dev/null)" == installed ]]; }

# ensure_installed installs the release package (offline: every dependency is in the image).
ensure_installed() {
  installed && return 0
  say "installing $ANET_RIG_DEB"
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$ANET_RIG_DEB" </dev/null || fail "apt-get install $ANET_RIG_DEB"
}

# op_config writes op's node configuration: the openai back-end, which starts no agent
# program, and a key for it, so that `anet doctor` can pass on a host with no agent CLI and no
# network. The key is a placeholder: nothing in the rig reaches a model service.
op_config() {
  as_op mkdir -p /home/op/.config/anet
  as_op sh -c 'umask 022; printf "%s\n" "auto_reply:" "  backend: openai" >/home/op/.config/anet/config.yaml'
  as_op sh -c 'umask 077; printf "%s\n" "openai: sk-rig-placeholder-not-a-key" >/home/op/.config/anet/keys.yaml'
}

# ensure_op_node starts op's node as the README says (the user unit), once.
ensure_op_node() {
  ensure_installed
  if as_op systemctl --user is-active --quiet anetd; then return 0; fi
  [[ -f /home/op/.config/anet/config.yaml ]] || op_config
  as_op systemctl --user daemon-reload
  as_op systemctl --user enable --now anetd || {
    as_op systemctl --user status anetd --no-pager || true
    fail "systemctl --user enable --now anetd"
  }
  wait_for 60 as_op anet status || fail "anet status does not answer after start"
}

# ensure_op2_node starts op2's node as the system template anetd@op2.service, with its own peer
# port and op_config's placeholder back-end, once.
ensure_op2_node() {
  ensure_installed
  if systemctl is-active --quiet anetd@op2.service; then return 0; fi
  if [[ ! -f /home/op2/.config/anet/config.yaml ]]; then
    as_op2 mkdir -p /home/op2/.config/anet
    as_op2 sh -c 'umask 022; printf "%s\n" "listen: \"127.0.0.1:7421\"" "auto_reply:" "  backend: openai" >~/.config/anet/config.yaml'
    as_op2 sh -c 'umask 077; printf "%s\n" "openai: sk-rig-placeholder-not-a-key" >~/.config/anet/keys.yaml'
  fi
  systemctl daemon-reload
  timed "systemctl enable --now anetd@op2" systemctl enable --now anetd@op2.service || {
    systemctl status anetd@op2.service --no-pager || true
    fail "systemctl enable --now anetd@op2"
  }
  wait_for 60 as_op2 anet status || fail "anet status as op2 does not answer after start"
}

# aa_labels WHEN (the AppArmor scenarios) starts a run as op that prints its own AppArmor label
# and CapEff, then waits; while it waits, bwrap's label is read from outside. Sets run_label,
# run_capeff and bwrap_label.
aa_labels() {
  rm -f /tmp/aa.out /tmp/aa.err
  as_op /usr/libexec/anet/anet-sandboxd exec -- /bin/sh -c 'cat /proc/self/attr/current; echo; grep ^CapEff: /proc/self/status; sleep 20' \
    >/tmp/aa.out 2>/tmp/aa.err &
  local run=$! pid=""
  wait_for 30 grep -q '^CapEff:' /tmp/aa.out || fail "$1: the run printed nothing: $(head -c 600 /tmp/aa.err)"
  pid=$(pgrep -u op -x bwrap | head -1) || true
  [[ -n "$pid" ]] || fail "$1: no bwrap process of op while the run waits"
  bwrap_label=$(tr -d '\0' <"/proc/$pid/attr/current")
  kill "$run" 2>/dev/null || true
  pkill -u op -x bwrap 2>/dev/null || true
  wait "$run" 2>/dev/null || true
  run_label=$(sed -n 1p /tmp/aa.out | tr -d '\0')
  run_capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /tmp/aa.out)
  say "$1: bwrap is '$bwrap_label'; the run is '$run_label', CapEff $run_capeff"
}

# userns_check prints doctor's host.userns check as op (a Python dict's text).
userns_check() { as_op anet doctor --json | json_get '[c for c in j["checks"] if c["name"]=="host.userns"][0]'; }

# in_service CMD… runs CMD as op from anet-service, the child cgroup of op's anetd unit where
# the node's own processes live, as a process of the node would (anetd's helpers run there):
# root moves this subshell in, then drops to op without PAM, so nothing moves it out again.
# stdin is closed.
in_service() {
  local svc uid
  svc=/sys/fs/cgroup$(as_op systemctl --user show anetd -p ControlGroup --value)/anet-service
  uid=$(id -u op)
  [[ -d $svc ]] || fail "in_service: $svc does not exist"
  (
    echo "$BASHPID" >"$svc/cgroup.procs"
    cd /home/op
    exec setpriv --reuid="$uid" --regid="$(id -g op)" --init-groups -- env -i HOME=/home/op USER=op LOGNAME=op \
      PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 XDG_RUNTIME_DIR=/run/user/$uid \
      DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$uid/bus "$@" </dev/null
  )
}
