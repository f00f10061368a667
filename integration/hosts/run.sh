#!/bin/bash
# The hosts rig's runner, in the guest (anet-rig.service runs it from the share, as root, once
# systemd has reached multi-user.target and user@1000.service runs). It runs every
# scenarios/*.sh in name order, or only ANET_RIG_SCENARIO, and writes for each NAME
#   out/NAME.log   what the scenario printed, then its time
#   out/NAME.rc    its exit status (the result: 0 passed)
#   out/NAME.journal  the guest's journal while it ran
# then out/journal.log (the tail of the whole boot's journal) and out/done. The contract a
# scenario keeps is in README.md beside this file.
set -uo pipefail
share=/rig
out=$share/out
mkdir -p "$out"
# rig.env is written by the test: which scenario, the packages and their versions.
# shellcheck source=/dev/null
. "$share/rig.env"

# The packages are copied off the share: apt reads them as its own user, and the share's files
# belong to whoever runs QEMU on the host.
export ANET_RIG_SHARE=$share ANET_RIG_OUT=$out ANET_RIG_WORK=/var/tmp/rig
mkdir -p "$ANET_RIG_WORK"
cp "$share/debs/$ANET_RIG_DEB" "$share/debs/$ANET_RIG_DEB_UPGRADE" "$ANET_RIG_WORK/"
chmod 644 "$ANET_RIG_WORK"/*.deb
export ANET_RIG_DEB=$ANET_RIG_WORK/$ANET_RIG_DEB ANET_RIG_DEB_UPGRADE=$ANET_RIG_WORK/$ANET_RIG_DEB_UPGRADE
export ANET_RIG_VERSION ANET_RIG_UPGRADE_VERSION ANET_RIG_LIB=$share/lib.sh

{
  echo "virt: $(systemd-detect-virt 2>/dev/null || echo none)"
  echo "uptime_at_start: $(cut -d' ' -f1 /proc/uptime)"
  echo "kernel: $(uname -r)"
  echo "systemd: $(systemctl --version | head -1)"
} >"$out/guest.txt"
cat "$out/guest.txt"

timeout_s=${ANET_RIG_SCENARIO_TIMEOUT:-600}
for f in "$share"/scenarios/*.sh; do
  name=$(basename "$f" .sh)
  if [[ -n "${ANET_RIG_SCENARIO:-}" && "$name" != "$ANET_RIG_SCENARIO" ]]; then
    continue
  fi
  echo "=== scenario $name"
  cursor=$(journalctl -n0 --show-cursor --no-pager 2>/dev/null | sed -n 's/^-- cursor: //p')
  start=$(date +%s.%N)
  (cd /root && ANET_RIG_SCENARIO_NAME=$name timeout -k 10 "$timeout_s" bash "$f") >"$out/$name.log" 2>&1 </dev/null
  rc=$?
  took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
  [[ $rc -eq 124 ]] && echo "rig: the scenario ran past ${timeout_s} s and was stopped" >>"$out/$name.log"
  echo "rig: scenario $name took ${took} s, exit $rc" >>"$out/$name.log"
  if [[ -n "$cursor" ]]; then
    journalctl --after-cursor="$cursor" --no-pager >"$out/$name.journal" 2>&1
  else
    journalctl -b --no-pager | tail -300 >"$out/$name.journal" 2>&1
  fi
  echo "$rc" >"$out/$name.rc"
  echo "=== scenario $name: exit $rc in ${took} s"
done
journalctl -b --no-pager 2>&1 | tail -200 >"$out/journal.log"
touch "$out/done"
sync
