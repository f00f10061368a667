#!/bin/bash
# Ubuntu 24.04 as installed (L2, A1–A3): its apparmor package turns on
# kernel.apparmor_restrict_unprivileged_userns, so an unconfined bwrap cannot set up its user
# namespace. The node says so with userns_blocked and the install command, in the run's refusal
# and in `anet doctor`; the install command (run as root: the guest has no sudo) loads the
# printed profile with Ubuntu's AppArmor 4.0 parser, and then runs start, bwrap under anet-bwrap
# and the run under anet-bwrap//&anet-bwrap-unpriv with no capability. `apparmor_parser -R`
# brings the refusal back.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node
sbx=/usr/libexec/anet/anet-sandboxd
prof=/etc/apparmor.d/anet-bwrap
sw=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
trap 'apparmor_parser -R "$prof" >/dev/null 2>&1 || true; rm -f "$prof"' EXIT

say "the host: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), $(apparmor_parser --version | head -1)"
[[ -e $sw ]] || fail "kernel $(uname -r) has no $sw"
[[ "$(cat "$sw")" == 1 ]] || fail "$sw is $(cat "$sw"), want 1 as Ubuntu 24.04 sets it (/usr/lib/sysctl.d/10-apparmor.conf)"
grep -q '^anet-bwrap' /sys/kernel/security/apparmor/profiles && fail "an anet profile is already loaded"
ok "the restriction is on, as installed, and no anet profile is loaded"

# refused WHEN: a run must be refused with userns_blocked and the install command.
refused() {
  set +e
  as_op "$sbx" exec --outcome /tmp/u.outcome -- /bin/true >/tmp/u.out 2>/tmp/u.err
  rc=$?
  set -e
  say "$1: exec exit $rc; stderr: $(head -c 700 /tmp/u.err | tr '\n' '|')"
  [[ $rc -ne 0 ]] || fail "$1: a run started although the restriction is on and no profile is loaded"
  grep -q userns_blocked /tmp/u.err /tmp/u.outcome 2>/dev/null || fail "$1: the refusal does not name userns_blocked"
  grep -q "apparmor_parser -r $prof" /tmp/u.err /tmp/u.outcome 2>/dev/null || fail "$1: the refusal does not give the install command"
}

say "1. before the profile: userns_blocked, with the install command"
refused "before the profile"
c=$(userns_check) || true
say "doctor's userns check: $c"
[[ "$c" == *userns_blocked* ]] || fail "doctor does not report userns_blocked"
[[ "$c" == *"apparmor_parser -r $prof"* ]] || fail "doctor's fix is not the install command"
ok "the run is refused with userns_blocked, and doctor gives the install command"

say "2. the install command; then the sandbox works, confined"
as_op anet doctor --apparmor-profile >/tmp/anet-bwrap || fail "anet doctor --apparmor-profile exited $?"
install -m 644 /tmp/anet-bwrap "$prof"
timed "apparmor_parser -r" apparmor_parser -r "$prof" || fail "Ubuntu's parser refuses the printed profile"
out=$(as_op "$sbx" exec -- /bin/echo inside 2>/tmp/u.err) || fail "a run with the profile loaded: $(head -c 700 /tmp/u.err)"
[[ "$out" == inside ]] || fail "the run printed '$out'"
aa_labels "with the profile"
[[ "$bwrap_label" == "anet-bwrap (enforce)" ]] || fail "bwrap runs as '$bwrap_label', want anet-bwrap (enforce)"
[[ "$run_label" == "anet-bwrap//&anet-bwrap-unpriv (enforce)" ]] ||
  fail "the run's process is '$run_label', want anet-bwrap//&anet-bwrap-unpriv (enforce)"
[[ "$run_capeff" =~ ^0+$ ]] || fail "the run's process has effective capabilities $run_capeff"
c=$(userns_check) || true
[[ "$c" == *"'ok': True"* ]] || fail "doctor still fails the userns check with the profile loaded: $c"
timed "anet doctor" as_op sh -c 'exec anet doctor >/tmp/u.doctor 2>&1' || fail "anet doctor fails with the profile loaded: $(tail -20 /tmp/u.doctor)"
ok "runs start under the profile; anet doctor passes, its userns check too"

say "3. apparmor_parser -R: refused again"
apparmor_parser -R "$prof" || fail "apparmor_parser -R failed"
rm -f "$prof"
refused "after -R"
ok "removed: userns_blocked again"
