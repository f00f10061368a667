#!/bin/bash
# The release .deb installs offline on a stock Debian 12 and its user unit runs the node as the
# README says (C4, L1, S6, S8, F2): the files where the README's table puts them, anetd active
# under op's user manager, `anet status` and `anet doctor` answering, and doctor reporting the
# limits `full` by the mechanism the node uses under a user manager.
set -euo pipefail
. "$ANET_RIG_LIB"

say "apt-get install ./$(basename "$ANET_RIG_DEB") with no network and no package lists"
compgen -G "/var/lib/apt/lists/*_Packages" >/dev/null && fail "apt has package lists: the install would not prove offline"
installed && fail "anet is already installed: this scenario must see a fresh guest"
timed "apt-get install" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$ANET_RIG_DEB" </dev/null ||
  fail "apt-get install $ANET_RIG_DEB"
installed || fail "dpkg does not list anet as installed"
ok "installed $(dpkg-query -W -f='${Version}' anet)"

say "the files are where the README's table says"
for p in /usr/bin/anetd /usr/bin/anet /usr/libexec/anet/anet-sandboxd /usr/libexec/anet/anet-egress /usr/libexec/anet/anet-runinit; do
  [[ -x $p ]] || fail "$p is not an executable"
done
for p in /usr/lib/systemd/user/anetd.service /usr/lib/systemd/system/anetd@.service \
  /usr/share/man/man1/anet.1.gz /usr/share/man/man8/anetd.8.gz /usr/share/man/man8/anet-sandboxd.8.gz \
  /usr/share/man/man8/anet-egress.8.gz /usr/share/bash-completion/completions/anet \
  /usr/share/zsh/vendor-completions/_anet /usr/share/fish/vendor_completions.d/anet.fish \
  /usr/share/doc/anet/copyright /usr/share/doc/anet/changelog.Debian.gz /usr/share/doc/anet/README.md \
  /usr/share/lintian/overrides/anet; do
  [[ -f $p ]] || fail "$p is missing"
done
ok "binaries, units, man pages, completions and docs in place"
say "the recommended qemu-system-x86 was skipped (not installable offline), the Depends met"
dpkg-query -W -f='${Depends}\n' anet
command -v bwrap >/dev/null || fail "bwrap is not installed"

say "systemctl --user enable --now anetd, as op"
op_config
as_op systemctl --user daemon-reload
t0=$(now)
as_op systemctl --user enable --now anetd || { as_op systemctl --user status anetd --no-pager || true; fail "enable --now anetd"; }
printf 'rig: time: systemctl --user enable --now anetd %s s\n' "$(since "$t0")"
[[ "$(as_op systemctl --user is-active anetd)" == active ]] || fail "anetd is $(as_op systemctl --user is-active anetd)"
[[ -L /home/op/.config/systemd/user/default.target.wants/anetd.service ]] || fail "enable made no default.target.wants link"
ok "anetd active, pid $(as_op systemctl --user show anetd -p MainPID --value)"

say "anet status answers as op"
timed "anet status" as_op anet status || fail "anet status"
as_op anet status --json >/tmp/status.json || fail "anet status --json"
aid=$(json_get 'j["aid"]' </tmp/status.json)
[[ -n "$aid" ]] || fail "status has no aid"
ok "aid $aid"

say "anet doctor passes as op, with limits full by a real mechanism"
set +e
timed "anet doctor" as_op anet doctor
rc=$?
set -e
as_op anet doctor --json >/tmp/doctor.json || true
limits=$(json_get 'j.get("limits","")' </tmp/doctor.json)
mech=$(json_get 'j.get("mechanism","")' </tmp/doctor.json)
say "doctor: limits '$limits', mechanism '$mech', exit $rc"
[[ $rc -eq 0 ]] || fail "anet doctor exited $rc"
[[ "$limits" == full ]] || fail "doctor reports limits '$limits', want full"
[[ -n "$mech" && "$mech" != none ]] || fail "doctor reports the mechanism '$mech'"
json_get '[c["name"] for c in j["checks"] if c["name"].startswith("probe.") and not c["ok"]]' </tmp/doctor.json | grep -qx '\[\]' ||
  fail "a probe check failed"
ok "limits full by '$mech'"
say "the status agrees: $(json_get 'j["auto_reply"]["sandbox"]' </tmp/status.json)"
