package doctor

// AppArmorProfile is the narrow profile of A1–A3: `profile anet-bwrap` is attached to
// /usr/bin/bwrap and may create user namespaces; everything bwrap starts (the agent
// included) runs under the stack anet-bwrap//&anet-bwrap-unpriv, and anet-bwrap-unpriv holds
// no capability. The structure follows Ubuntu's bwrap-userns-restrict and changes no sysctl.
// abi 4.0 is what Ubuntu 24.04's parser (AppArmor 4.0) knows; later parsers accept it too.
const AppArmorProfile = `# AppArmor profile for the ANet node's sandbox (bubblewrap).
# Printed by: anet doctor --apparmor-profile
# Install:    anet doctor --apparmor-profile | sudo tee /etc/apparmor.d/anet-bwrap >/dev/null \
#               && sudo apparmor_parser -r /etc/apparmor.d/anet-bwrap
# Remove:     sudo apparmor_parser -R /etc/apparmor.d/anet-bwrap && sudo rm /etc/apparmor.d/anet-bwrap
abi <abi/4.0>,

include <tunables/global>

profile anet-bwrap /usr/bin/bwrap flags=(attach_disconnected,mediate_deleted) {
  allow capability,
  allow file rwlkm /{**,},
  allow network,
  allow unix,
  allow ptrace,
  allow signal,
  allow mqueue,
  allow io_uring,
  allow userns,
  allow mount,
  allow umount,
  allow pivot_root,
  allow dbus,

  # Whatever bwrap executes runs stacked with anet-bwrap-unpriv: no capability survives.
  allow pix /** -> &anet-bwrap//&anet-bwrap-unpriv,

  include if exists <local/anet-bwrap>
}

profile anet-bwrap-unpriv flags=(attach_disconnected,mediate_deleted) {
  allow file rwlkm /{**,},
  allow network,
  allow unix,
  allow ptrace,
  allow signal,
  allow mqueue,
  allow io_uring,
  allow userns,
  allow mount,
  allow umount,
  allow pivot_root,
  allow dbus,

  allow pix /** -> &anet-bwrap-unpriv,

  audit deny capability,

  include if exists <local/anet-bwrap-unpriv>
}
`

// InstallCommand is the command the userns_blocked sentence gives (L2).
const InstallCommand = "anet doctor --apparmor-profile | sudo tee /etc/apparmor.d/anet-bwrap >/dev/null && sudo apparmor_parser -r /etc/apparmor.d/anet-bwrap"
