#!/bin/bash
# A kernel with AppArmor but without Ubuntu's switch (kernel.apparmor_restrict_unprivileged_userns
# is an Ubuntu kernel patch; Debian 13's kernel has AppArmor and no such switch): the node must
# not claim userns_blocked there, and its sandbox works with no profile loaded (L2). Ubuntu's
# restriction itself is the Ubuntu guest's scenario (scenarios-ubuntu/).
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node
sw=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
[[ ! -e $sw ]] || fail "kernel $(uname -r) offers $sw; this scenario is for a kernel without it"
say "kernel $(uname -r): AppArmor on, and no kernel.apparmor_restrict_unprivileged_userns"
grep -q '^anet-bwrap' /sys/kernel/security/apparmor/profiles && fail "an anet profile is loaded; this scenario wants none"
c=$(userns_check) || true
say "doctor's userns check: $c"
[[ "$c" == *"'ok': True"* ]] || fail "doctor fails the userns check on a kernel with no restriction"
[[ "$c" != *userns_blocked* ]] || fail "doctor reports userns_blocked on a kernel with no such switch"
out=$(as_op /usr/libexec/anet/anet-sandboxd exec -- /bin/echo inside 2>/tmp/b.err) || fail "a run with no profile: $(head -c 600 /tmp/b.err)"
[[ "$out" == inside ]] || fail "the run printed '$out'"
ok "no switch: doctor passes the userns check and a run starts with no profile loaded"
