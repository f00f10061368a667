#!/bin/bash
# The host is what operators run (C4, S6): systemd as pid 1, the unified cgroup v2 hierarchy
# with the memory and pids controllers, and op's user manager running from lingering.
set -euo pipefail
. "$ANET_RIG_LIB"

say "pid 1 is systemd"
comm=$(cat /proc/1/comm)
[[ "$comm" == systemd ]] || fail "pid 1 is $comm"
ok "pid 1: $(readlink /proc/1/exe)"

say "/sys/fs/cgroup is the unified cgroup2 hierarchy with memory and pids"
fstype=$(stat -f -c %T /sys/fs/cgroup)
[[ "$fstype" == cgroup2fs ]] || fail "/sys/fs/cgroup is $fstype, not cgroup2fs"
ctrls=$(cat /sys/fs/cgroup/cgroup.controllers)
for c in memory pids; do
  [[ " $ctrls " == *" $c "* ]] || fail "cgroup.controllers lacks $c: $ctrls"
done
ok "cgroup2, controllers: $ctrls"
if mountpoint -q /sys/fs/cgroup/unified 2>/dev/null; then fail "a hybrid hierarchy is mounted at /sys/fs/cgroup/unified"; fi

say "op (uid 1000) lingers and its user manager runs"
[[ -e /var/lib/systemd/linger/op ]] || fail "no linger file for op"
[[ "$(loginctl show-user op -p Linger --value)" == yes ]] || fail "loginctl says op does not linger"
timed "user@1000 active" wait_for 60 systemctl is-active --quiet user@1000.service || fail "user@1000.service is $(systemctl is-active user@1000.service)"
ok "user@1000.service: $(systemctl is-active user@1000.service)"
[[ -S /run/user/1000/bus ]] || fail "op has no session bus at /run/user/1000/bus"

say "systemctl --user is-system-running answers as op"
state=$(as_op systemctl --user is-system-running || true)
case "$state" in
running | degraded) ok "op's manager: $state" ;;
*) fail "op's manager answers '$state'" ;;
esac
say "op's manager delegates memory and pids to its units"
ctl=/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers
[[ -r $ctl ]] || fail "no $ctl"
for c in memory pids; do
  grep -qw "$c" "$ctl" || fail "user@1000.service's cgroup lacks $c: $(cat "$ctl")"
done
ok "user@1000.service controllers: $(cat "$ctl")"
say "the system is up: $(systemctl is-system-running || true)"

say "the guest is offline: lo is its only link, and resolv.conf names no name server (H5: the node must work so)"
links=$(ip -o link | awk -F': ' '{print $2}' | tr '\n' ' ')
[[ "$links" == "lo " ]] || fail "links: $links"
grep -q '^[[:space:]]*nameserver' /etc/resolv.conf && fail "resolv.conf names a name server: $(cat /etc/resolv.conf)"
ok "links: $links"
