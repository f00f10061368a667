#!/bin/bash
# Removing and purging the package leaves the user's own files, as the README says (C4):
# `apt-get remove anet` then `apt-get purge anet` take the package's files away and leave
# ~/.config/anet, ~/.local/share/anet (identity, store) and ~/.cache/anet in place.
set -euo pipefail
. "$ANET_RIG_LIB"
ensure_op_node

say "the node's files in op's home"
for d in /home/op/.config/anet /home/op/.local/share/anet; do [[ -d $d ]] || fail "$d missing before removal"; done
key=$(sha256sum /home/op/.local/share/anet/identity.key | cut -d' ' -f1)
find /home/op/.config/anet /home/op/.local/share/anet -maxdepth 1 | sort

say "the README's order: systemctl --user disable --now anetd, then apt remove"
as_op systemctl --user disable --now anetd || fail "disable --now anetd"
systemctl disable --now anetd@op2.service 2>/dev/null || true
timed "apt-get remove" env DEBIAN_FRONTEND=noninteractive apt-get remove -y anet </dev/null || fail "apt-get remove anet"
[[ ! -e /usr/bin/anetd && ! -e /usr/libexec/anet/anet-sandboxd && ! -e /usr/lib/systemd/user/anetd.service ]] || fail "remove left the package's files"
[[ ! -d /usr/libexec/anet ]] || fail "remove left /usr/libexec/anet"
ok "the package's files are gone"
# The package has no conffiles, so remove leaves nothing for purge: dpkg forgets it at once.
# Offline apt then cannot even name it ("Unable to locate package"); dpkg's purge is a no-op.
status=$(dpkg-query -W -f='${db:Status-Status}' anet 2>/dev/null || echo not-installed)
say "after remove dpkg has anet as: $status"
case "$status" in
config-files) timed "apt-get purge" env DEBIAN_FRONTEND=noninteractive apt-get purge -y anet </dev/null || fail "apt-get purge anet" ;;
not-installed) timed "dpkg --purge" dpkg --purge anet || fail "dpkg --purge anet" ;;
*) fail "anet is $status after apt-get remove" ;;
esac
ok "nothing of the package is left after remove and purge"
check_home() {
  for f in /home/op/.config/anet/config.yaml /home/op/.config/anet/keys.yaml /home/op/.local/share/anet/identity.key /home/op/.local/share/anet/anet.db; do
    [[ -f $f ]] || fail "$f is gone after $1"
  done
  [[ "$(sha256sum /home/op/.local/share/anet/identity.key | cut -d' ' -f1)" == "$key" ]] || fail "the identity key changed by $1"
}
check_home remove

say "and apt-get purge of the installed package (no remove first) leaves them too"
ensure_installed
timed "apt-get purge (installed)" env DEBIAN_FRONTEND=noninteractive apt-get purge -y anet </dev/null || fail "apt-get purge anet"
[[ "$(dpkg-query -W -f='${db:Status-Status}' anet 2>/dev/null || echo not-installed)" == not-installed ]] || fail "dpkg still knows anet after purge"
[[ ! -e /usr/bin/anetd ]] || fail "purge left /usr/bin/anetd"
check_home purge
ok "purged"

say "op's own files are left, as the README says"
ok "~/.config/anet and ~/.local/share/anet (identity, store) left as they were"
[[ -d /home/op/.cache/anet ]] && ok "~/.cache/anet left too" || say "(~/.cache/anet was never made)"
if [[ -d /home/op2/.local/share/anet ]]; then ok "op2's files left too"; fi
