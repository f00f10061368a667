#!/bin/bash
# AppArmor for real (A1–A3): the profile `anet doctor --apparmor-profile` prints compiles with
# the guest's AppArmor 4 parser and loads into a kernel booted with AppArmor on; a sandboxed run
# then shows bwrap confined by anet-bwrap and what bwrap starts by the stack
# anet-bwrap//&anet-bwrap-unpriv, with no effective capability; `apparmor_parser -R` takes it
# out again, and runs are unconfined after that. The install and remove commands are the ones
# the profile's own header gives, run as root (the guest has no sudo).
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node
prof=/etc/apparmor.d/anet-bwrap
loaded=/sys/kernel/security/apparmor/profiles
trap 'apparmor_parser -R "$prof" >/dev/null 2>&1 || true; rm -f "$prof"' EXIT

say "the kernel runs AppArmor, and the parser is AppArmor 4's"
[[ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" == Y ]] || fail "AppArmor is not enabled in the guest's kernel"
grep -qw apparmor /sys/kernel/security/lsm || fail "apparmor is not an active LSM: $(cat /sys/kernel/security/lsm)"
ver=$(apparmor_parser --version | head -1)
[[ "$ver" =~ version\ ([0-9]+)\. ]] && ((BASH_REMATCH[1] >= 4)) || fail "the parser: $ver, want AppArmor 4"
ok "AppArmor on ($(cat /sys/kernel/security/lsm)); $ver"

say "1. the printed profile compiles and loads"
as_op anet doctor --apparmor-profile >/tmp/anet-bwrap || fail "anet doctor --apparmor-profile exited $?"
grep -qx 'abi <abi/4.0>,' /tmp/anet-bwrap || fail "the profile does not declare abi 4.0"
# The header's install command is `... | sudo tee /etc/apparmor.d/anet-bwrap && sudo apparmor_parser -r ...`.
grep -q "sudo tee $prof" /tmp/anet-bwrap || fail "the profile's header does not give the install command"
install -m 644 /tmp/anet-bwrap "$prof"
timed "apparmor_parser -r" apparmor_parser -r "$prof" || fail "apparmor_parser -r $prof failed"
grep -qx 'anet-bwrap (enforce)' "$loaded" || fail "anet-bwrap is not loaded in enforce mode: $(grep anet "$loaded" | tr '\n' ' ')"
grep -qx 'anet-bwrap-unpriv (enforce)' "$loaded" || fail "anet-bwrap-unpriv is not loaded in enforce mode"
ok "loaded: $(grep '^anet-' "$loaded" | tr '\n' ' ')"

say "2. a sandboxed run under the profile"
aa_labels "with the profile"
[[ "$bwrap_label" == "anet-bwrap (enforce)" ]] || fail "bwrap runs as '$bwrap_label', want anet-bwrap (enforce)"
[[ "$run_label" == "anet-bwrap//&anet-bwrap-unpriv (enforce)" ]] ||
  fail "the run's process is '$run_label', want anet-bwrap//&anet-bwrap-unpriv (enforce)"
[[ "$run_capeff" =~ ^0+$ ]] || fail "the run's process has effective capabilities $run_capeff"
ok "bwrap under anet-bwrap, the run under anet-bwrap//&anet-bwrap-unpriv with no capability"

say "3. apparmor_parser -R removes it"
apparmor_parser -R "$prof" || fail "apparmor_parser -R failed"
rm -f "$prof"
grep -q '^anet-bwrap' "$loaded" && fail "still loaded after -R: $(grep '^anet-' "$loaded" | tr '\n' ' ')"
aa_labels "after -R"
[[ "$bwrap_label" == unconfined && "$run_label" == unconfined ]] ||
  fail "after -R bwrap is '$bwrap_label' and the run '$run_label', want unconfined"
ok "removed: bwrap and the run are unconfined again"
