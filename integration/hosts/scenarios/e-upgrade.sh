#!/bin/bash
# The node survives an upgrade of its package (C4, S7, S8): `apt-get install` of a higher
# version replaces the binaries; the package has no maintainer scripts (README: the reload and
# restart are the user's), so op restarts the user unit; the identity is the same and the
# evidence chain verifies with every entry it had before.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node

aid=$(as_op anet status --json | json_get 'j["aid"]')
ver=$(as_op anet status --json | json_get 'j["version"]')
as_op anet evidence note "before the upgrade" >/dev/null || fail "anet evidence note"
v1=$(as_op anet evidence verify --json) || fail "anet evidence verify before the upgrade"
n1=$(json_get 'j["entries"]' <<<"$v1")
say "before: aid $aid, version $ver, chain of $n1 entries ($v1)"
pid1=$(as_op systemctl --user show anetd -p MainPID --value)

say "the package has no maintainer scripts"
ls /var/lib/dpkg/info/anet.* | tee /dev/stderr | grep -E '\.(preinst|postinst|prerm|postrm)$' && fail "the package has maintainer scripts"

say "apt-get install ./$(basename "$ANET_RIG_DEB_UPGRADE")"
timed "apt-get install (upgrade)" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$ANET_RIG_DEB_UPGRADE" </dev/null ||
  fail "apt-get install of the upgrade"
[[ "$(dpkg-query -W -f='${Version}' anet)" == "$ANET_RIG_UPGRADE_VERSION-1" ]] || fail "dpkg has anet $(dpkg-query -W -f='${Version}' anet)"
ok "dpkg has anet $ANET_RIG_UPGRADE_VERSION-1"
pid2=$(as_op systemctl --user show anetd -p MainPID --value)
[[ "$pid2" == "$pid1" ]] || fail "the package restarted anetd ($pid1 -> $pid2), which it says it never does"
ok "anetd still the old process ($pid2) until op restarts it"

say "op restarts the node as the README says: daemon-reload, restart"
as_op systemctl --user daemon-reload
timed "systemctl --user restart anetd" as_op systemctl --user restart anetd || fail "restart anetd"
wait_for 60 as_op anet status || fail "anet status after the restart"
st=$(as_op anet status --json)
[[ "$(json_get 'j["aid"]' <<<"$st")" == "$aid" ]] || fail "the aid changed: $aid -> $(json_get 'j["aid"]' <<<"$st")"
nv=$(json_get 'j["version"]' <<<"$st")
[[ "$nv" == "$ANET_RIG_UPGRADE_VERSION" ]] || fail "the running anetd is version $nv, want $ANET_RIG_UPGRADE_VERSION"
ok "aid $aid unchanged; anetd now $nv"
v2=$(as_op anet evidence verify --json) || fail "anet evidence verify after the upgrade: $v2"
n2=$(json_get 'j["entries"]' <<<"$v2")
((n2 >= n1)) || fail "the chain has $n2 entries after the upgrade, $n1 before"
as_op anet evidence show --json | grep -q "before the upgrade" || fail "the note from before the upgrade is gone"
ok "chain verified: $n2 entries (>= $n1), the old note still there"
