#!/usr/bin/env bash
# One of the hosts rig's guests (integration/hosts): a stock Debian with systemd as pid 1 on the
# unified cgroup v2 hierarchy, a lingering user `op` (uid 1000) whose user manager runs from
# boot, a second user `op2` for the system template, and everything the anet package depends on,
# so that `apt install ./anet_*.deb` works with no network. Built from Debian's own packages by
# debootstrap, as root (scripts/deps.sh runs it in the deps phase), into OUT. SUITE is
#
#   bookworm       Debian 12: the host of most scenarios
#   trixie         Debian 13 with AppArmor 4's userspace (apparmor_parser), whose kernel the
#                  rig boots with AppArmor on: the AppArmor scenarios
#   noble          Ubuntu 24.04 from Ubuntu's archive, with its kernel and its restriction of
#                  unprivileged user namespaces: the scenario of the host that restricts them
#
# and the files are
#
#   SUITE.img      raw ext4 made with `mkfs.ext4 -d` from the tree (no loop mount)
#   SUITE.vmlinuz  the image's own kernel and initrd, for QEMU's -kernel and -initrd
#   SUITE.initrd
#   SUITE.key      the cache key (scripts/deps.sh: hosts_key), written last
#
#   hosts-image.sh OUT KEY SUITE
#
# The guest's only job is anet-rig.service: mount the 9p share tagged `rig` at /rig, run
# /rig/run.sh from it, power off. Nothing of the host goes into the image, and the host is not
# changed beyond OUT and the package cache beside it.
set -euo pipefail

out=${1:?usage: hosts-image.sh OUT KEY SUITE}
key=${2:?usage: hosts-image.sh OUT KEY SUITE}
suite=${3:?usage: hosts-image.sh OUT KEY SUITE}
mirror=${ANET_HOSTS_MIRROR:-http://deb.debian.org/debian}
# The image's size: the tree is ~1 GiB; the rest is room for the package, two nodes' stores
# and the runs' work dirs. Raw and sparse, so the unused part costs no disk.
size=4G

# Everything the guest needs, and what the anet package Depends on (packaging/nfpm.yaml:
# bubblewrap). Its Recommends (qemu-system-x86, for the opt-in vm tier) is left out on
# purpose: apt skips a recommended package it cannot find, which is what an offline install
# of the package must do. The kernel package (per suite, below) is installed in the tree so that
# initramfs-tools builds the initrd there, with the modules the hook below adds.
pkgs=(
  systemd systemd-sysv dbus dbus-user-session libpam-systemd udev kmod initramfs-tools
  bubblewrap ca-certificates curl python3 procps iproute2
)
# What debootstrap is given beyond the suite: its mirror, components and script, and the
# keyring that verifies the suite's Release file (empty: the host's Debian keyring).
components=main
script=
keyring=
case "$suite" in
# ripgrep, socat: what Anthropic's sandbox-runtime needs on Linux beside bubblewrap; it is
# the launch bench's other anchor (i-launch-bench), with Node copied in by the rig.
bookworm) pkgs+=(linux-image-amd64 ripgrep socat) ;;
# apparmor: the parser and apparmor.service, which loads /etc/apparmor.d at boot. Debian's
# kernel has AppArmor built in; the rig's command line turns it on explicitly.
trixie) pkgs+=(linux-image-amd64 apparmor) ;;
# Ubuntu 24.04 as released, with its own kernel (linux-image-virtual: the generic kernel with
# the modules a VM needs) and its apparmor package, whose sysctl file turns on
# kernel.apparmor_restrict_unprivileged_userns. bubblewrap is in universe. Debian 12's
# debootstrap has no script named noble; every Ubuntu release uses the one named gutsy.
noble)
  pkgs+=(linux-image-virtual apparmor)
  mirror=${ANET_HOSTS_UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
  components=main,universe
  script=/usr/share/debootstrap/scripts/gutsy
  ;;
*)
  echo "hosts: unknown suite $suite (want bookworm, trixie or noble)" >&2
  exit 2
  ;;
esac

start=$(date +%s)
mkdir -p "$out" "$out/debs-$suite"
chmod 755 "$out"
work=$(mktemp -d "$out/build.XXXXXX")
root=$work/root
cleanup() {
  # debootstrap unmounts what it mounted when it exits; a failure half-way may leave them.
  for m in proc sys dev/pts dev; do
    mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
  done
  rm -rf "$work"
}
# ANET_HOSTS_KEEP=1 keeps a failed build's tree and logs for a look.
trap '[[ $? -ne 0 && ${ANET_HOSTS_KEEP:-} == 1 ]] && echo "hosts: kept $work" >&2 || cleanup' EXIT

# The modules the guest needs early, in the initrd: the root disk (virtio-blk on PCI) and the
# share (9p over virtio). Listed in /etc/initramfs-tools/modules, the operator's file; it is a
# conffile of initramfs-tools, so it cannot be there before the package is unpacked, and a hook
# (a file of no package) adds the same modules to the first initrd the kernel's postinst makes.
modules=(virtio_pci virtio_blk 9pnet_virtio 9p)
mkdir -p "$root/etc/initramfs-tools/hooks"
cat >"$root/etc/initramfs-tools/hooks/anet-rig" <<EOF
#!/bin/sh
# The hosts rig's guest: the root disk and the 9p share are virtio devices.
[ "\$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
for m in ${modules[*]}; do manual_add_modules "\$m"; done
EOF
chmod 755 "$root/etc/initramfs-tools/hooks/anet-rig"

# Debian has no package of Ubuntu's archive keys: the keyring comes from Ubuntu's own package,
# whose hash is pinned here (taken once from noble's Packages file), so that what verifies
# noble's Release file is a fixed, known file and not whatever the mirror serves today.
if [[ $suite == noble ]]; then
  kr_deb=ubuntu-keyring_2023.11.28.1_all.deb
  kr_sha=36de43b15853ccae0028e9a767613770c704833f82586f28eb262f0311adb8a8
  [[ -f "$out/$kr_deb" ]] ||
    curl -fsS -o "$out/$kr_deb" "$mirror/pool/main/u/ubuntu-keyring/$kr_deb" ||
    { echo "hosts: could not download $kr_deb from $mirror" >&2; exit 1; }
  echo "$kr_sha  $out/$kr_deb" | sha256sum -c --quiet - ||
    { rm -f "$out/$kr_deb"; echo "hosts: $kr_deb does not have the pinned hash" >&2; exit 1; }
  dpkg-deb -x "$out/$kr_deb" "$work/keyring"
  keyring=$work/keyring/usr/share/keyrings/ubuntu-archive-keyring.gpg
fi

echo "hosts: debootstrap --variant=minbase $suite (${#pkgs[@]} packages and their dependencies)"
debootstrap --variant=minbase --merged-usr --cache-dir="$out/debs-$suite" --components="$components" \
  ${keyring:+--keyring="$keyring"} --include="$(IFS=,; echo "${pkgs[*]}")" \
  "$suite" "$root" "$mirror" ${script:+"$script"} >"$work/debootstrap.log" 2>&1 || {
  tail -40 "$work/debootstrap.log" >&2
  echo "hosts: debootstrap failed (log above)" >&2
  exit 1
}
printf '%s\n' "${modules[@]}" >>"$root/etc/initramfs-tools/modules"

# The guest is offline: no package lists, and apt never tries a mirror.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
echo "deb $mirror $suite ${components//,/ }" >"$root/etc/apt/sources.list"

# debootstrap copies the build host's resolver into the tree; nothing of the host belongs in
# the guest. An offline host names no name server, and the node must work there (anet-egress
# reads resolv.conf only when a run asks for a tunnel).
echo "# the hosts rig's guest is offline: no name server" >"$root/etc/resolv.conf"
echo rig >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\trig\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
# One fixed machine id: no first-boot logic, and the same journal every boot.
echo 3d0b3c1e6a0f4c2c9a4d6c1e0b7f5a21 >"$root/etc/machine-id"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 0\n' >"$root/etc/fstab"
# The journal lives in memory: the disk is a throw-away snapshot anyway.
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/rig.conf"

# Root has no password (the serial console is the only way in); op and op2 are ordinary users.
chroot "$root" passwd -d root >/dev/null
chroot "$root" useradd --create-home --uid 1000 --shell /bin/bash op
chroot "$root" useradd --create-home --uid 1001 --shell /bin/bash op2
# Lingering, as `loginctl enable-linger op` records it: logind starts user@1000.service at
# boot, with /run/user/1000 and the user's bus, and keeps it without a session.
mkdir -p "$root/var/lib/systemd/linger"
touch "$root/var/lib/systemd/linger/op"

# The serial console: systemd's getty generator starts serial-getty@ttyS0 from console=ttyS0;
# enabling it also keeps a login prompt there for whoever debugs the guest by hand.
mkdir -p "$root/etc/systemd/system/getty.target.wants"
ln -sf /usr/lib/systemd/system/serial-getty@.service \
  "$root/etc/systemd/system/getty.target.wants/serial-getty@ttyS0.service"

cat >"$root/usr/local/sbin/anet-rig" <<'EOF'
#!/bin/bash
# The hosts rig's one job (anet-rig.service): mount the share, run its run.sh, power off.
# run.sh's own output goes to the console and to /rig/out/run.log.
set -uo pipefail
modprobe 9pnet_virtio 2>/dev/null; modprobe 9p 2>/dev/null
mkdir -p /rig
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 rig /rig; then
  mkdir -p /rig/out
  echo "anet-rig: share mounted; running /rig/run.sh"
  bash /rig/run.sh 2>&1 | tee /rig/out/run.log
  echo "anet-rig: run.sh exited ${PIPESTATUS[0]}"
  sync
else
  echo "anet-rig: cannot mount the 9p share tagged rig"
fi
systemctl --no-block poweroff
EOF
chmod 755 "$root/usr/local/sbin/anet-rig"
cat >"$root/etc/systemd/system/anet-rig.service" <<'EOF'
[Unit]
Description=ANet hosts rig: run the scenarios from the 9p share, then power off
After=multi-user.target user@1000.service
Wants=user@1000.service

# exec, not oneshot: the boot finishes (is-system-running says running, as on any host)
# while the scenarios run, instead of waiting for them.
[Service]
Type=exec
ExecStart=/usr/local/sbin/anet-rig
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/anet-rig.service "$root/etc/systemd/system/multi-user.target.wants/anet-rig.service"
# What the rig does not need at boot and would only slow it.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
  rm -f "$root/etc/systemd/system/timers.target.wants/$u"
done

kver=$(basename "$(ls -d "$root"/usr/lib/modules/* | head -1)")
[[ -f "$root/boot/vmlinuz-$kver" && -f "$root/boot/initrd.img-$kver" ]] ||
  { echo "hosts: the tree has no kernel and initrd for $kver" >&2; exit 1; }
# The initrd must carry the modules (the root disk is virtio): fail here, not at boot.
chroot "$root" lsinitramfs "/boot/initrd.img-$kver" >"$work/initrd.list" 2>&1 ||
  { tail -5 "$work/initrd.list" >&2; echo "hosts: lsinitramfs failed in the tree" >&2; exit 1; }
# A module the kernel has built in (Debian 13's virtio_pci) is in modules.builtin instead.
for m in "${modules[@]}"; do
  grep -q "/${m}\.ko" "$work/initrd.list" "$root/usr/lib/modules/$kver/modules.builtin" ||
    { echo "hosts: the initrd lacks $m, and the kernel does not have it built in" >&2; exit 1; }
done
install -m 644 "$root/boot/vmlinuz-$kver" "$work/$suite.vmlinuz"
install -m 644 "$root/boot/initrd.img-$kver" "$work/$suite.initrd"

echo "hosts: mkfs.ext4 -d (kernel $kver, $(du -sh "$root" | cut -f1) tree)"
truncate -s "$size" "$work/$suite.img"
mkfs.ext4 -q -F -L rig -d "$root" "$work/$suite.img" >"$work/mkfs.log" 2>&1 ||
  { cat "$work/mkfs.log" >&2; echo "hosts: mkfs.ext4 -d failed" >&2; exit 1; }
chmod 644 "$work/$suite.img"
rm -f "$out/$suite.key"
mv "$work/$suite.img" "$work/$suite.vmlinuz" "$work/$suite.initrd" "$out/"
echo "$key" >"$out/$suite.key"
echo "hosts: built $out/$suite.img in $(($(date +%s) - start)) s"
