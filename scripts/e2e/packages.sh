#!/bin/bash
# The packages' life on the booted machine, run as root inside it by scripts/e2e.sh around
# scenario.sh, as an administrator would live it:
#     bash /usr/local/lib/e2e/packages.sh install     apt install of the previous version (boot 1)
#     (scenario.sh first-boot: setup --system, users, logins, items)
#     bash /usr/local/lib/e2e/packages.sh upgrade     apt install of this version, alice logged in
#     (reboot; scenario.sh second-boot, which ends with setup --system --undo)
#     bash /usr/local/lib/e2e/packages.sh remove      setup --system, apt remove, apt purge,
#                                                    apt install again, setup --system, logins;
#                                                    then without gnome-keyring (a server)
# The packages are in /root/debs/previous and /root/debs/current (e2e.sh put them there; the
# previous version is this one's files under a lower version, see e2e.sh). The machine has no
# network: apt resolves their dependencies from Debian's package lists and takes the packages
# e2e.sh downloaded into apt's cache before the boot.

# shellcheck source=lib.sh
. /usr/local/lib/e2e/lib.sh
# shellcheck source=state.sh
. /usr/local/lib/e2e/state.sh

# ---- what installing does and does not switch on

# The profile is registered (pam-auth-update lists it) and off.
pam_profile_registered() {
    [ -f /usr/share/pam-configs/secretd ] && grep -qx 'Default: no' /usr/share/pam-configs/secretd && no_pam_lines
}
# gnome-keyring's activation file for org.freedesktop.secrets is its own, in place.
gk_activation_file_kept() {
    local path=/usr/share/dbus-1/services/org.freedesktop.secrets.service owner
    owner=$(dpkg -S "$path" 2>&1)
    [ "$owner" = "gnome-keyring: $path" ] && [ ! -L "$path" ] && grep -q gnome-keyring-daemon "$path" && return 0
    ls -l "$path"
    echo "dpkg -S: $owner"
    return 1
}
# Each file of the packages belongs to that package alone, and every package's files are as
# dpkg installed them (e2e.sh's own /etc/pam.d/sshd aside).
files_own() {
    local package path owners bad=""
    for package in $PACKAGES; do
        while read -r path; do
            [ -d "$path" ] && continue
            owners=$(dpkg -S "$path" 2>/dev/null | cut -d: -f1)
            [ "$owners" = "$package" ] || bad="$bad $path ($owners)"
        done < <(dpkg -L "$package")
    done
    [ -z "$bad" ] && return 0
    echo "files owned by more than their package:$bad"
    return 1
}
packages_intact() {
    local out
    # /etc/pam.d/sshd is e2e.sh's own change (gnome-keyring's lines for carol); gnome-keyring's
    # autostart entries (secrets, ssh) are setup --system's (their Hidden=true), while setup is in force.
    out=$(dpkg_verify | grep -Ev '^\S+ +c /etc/pam\.d/sshd$' |
        { if setup_in_force; then grep -Ev '^\S+ +c /etc/xdg/autostart/gnome-keyring-(secrets|ssh)\.desktop$'; else cat; fi })
    [ -z "$out" ] && return 0
    printf '%s\n' "$out"
    echo "dpkg --verify reports changed package files"
    return 1
}
# The Depends dpkg-shlibdeps computed brought every library the programs need.
libraries_found() {
    local program missing
    for program in /usr/bin/secretd /usr/bin/secretctl /usr/lib/*/security/pam_secretd.so; do
        missing=$(ldd "$program" 2>&1 | grep 'not found')
        [ -z "$missing" ] || { echo "$program: $missing"; return 1; }
    done
    secretd --version && secretctl --version
}
shows_version() { expect_output "secretd $1" secretd --version; }

install_previous() {
    local version
    version=$(version_of previous)
    check "install: apt install ./secretd_… ./secretctl_… ./libpam-secretd_… ($version, dependencies from Debian's archive)" \
        apt_install previous
    note "apt installed: $(dpkg-query -W -f '${Package} ${Version}; ' $PACKAGES)"
    check "install: every library secretd, secretctl and pam_secretd.so link is there (ldd), both programs run" libraries_found
    check "install: the PAM profile is registered, off (Default: no): no pam_secretd in /etc/pam.d/common-*" pam_profile_registered
    check "install: no secretd unit enabled for every user (/etc/systemd/user)" no_units
    check "install: gnome-keyring's org.freedesktop.secrets.service is its own and in place (dpkg -S)" gk_activation_file_kept
    check "install: each of the packages' files belongs to its package alone (dpkg -S)" files_own
    check "install: no file of another package changed (dpkg --verify)" packages_intact
}

# ---- the upgrade, while alice is logged in and her secretd serves her items

alice_secretd() { pgrep -u "$(id -u alice)" -x secretd | head -n 1; }
setup_kept() {
    grep -q '^[^#]*pam_secretd\.so' /etc/pam.d/common-session || { echo "pam_secretd left common-session"; return 1; }
    [ -n "$(find /etc/systemd/user -path '*.wants/secretd.service')" ] || { echo "secretd.service no longer enabled globally"; return 1; }
    dpkg-divert --list /usr/share/dbus-1/services/org.freedesktop.secrets.service | grep -q '\.gnome-keyring' ||
        { echo "gnome-keyring's activation file is no longer diverted"; return 1; }
    [ -e /usr/share/dbus-1/services/org.freedesktop.secrets.service ] || { echo "the activation link leads nowhere"; return 1; }
}
same_secretd() {
    local now
    now=$(alice_secretd)
    [ -n "$now" ] && [ "$now" = "$(cat /run/e2e-secretd-pid)" ] && return 0
    echo "alice's secretd was pid $(cat /run/e2e-secretd-pid), now ${now:-none}"
    return 1
}

upgrade() {
    local holder previous current
    previous=$(version_of previous)
    current=$(version_of current)
    ssh_password alice "$PASSWORD_1" bash "$E2E_DIR/session.sh" hold 120 >/tmp/hold-upgrade.log 2>&1 &
    holder=$!
    check "upgrade: alice's open session has her login keyring unlocked" wait_unlocked
    alice_secretd >/run/e2e-secretd-pid
    check "upgrade: her items read back before the upgrade (secretctl get)" expect_output "$SECRET_TOOL" as_user alice secretctl get svc acc
    check "upgrade: apt install of $current over $previous" apt_install current
    check "upgrade: secretd --version is the new one" shows_version "$(version_of current | sed 's/+deb[0-9]*$//')"
    check "upgrade: alice's running secretd was not restarted (the same pid)" same_secretd
    check "upgrade: her items still read in the open session" expect_output "$SECRET_TOOL" as_user alice secretctl get svc acc
    check "upgrade: setup --system's changes are kept (PAM profile on, units enabled, gnome-keyring's file diverted)" setup_kept
    check "upgrade: no file of another package changed (dpkg --verify)" packages_intact
    logout_check "upgrade"
    wait "$holder" 2>/dev/null
    rm -f /run/e2e-secretd-pid
}

# ---- removal, purge and a new installation, with dave's keyring on disk

# dave_session FUNCTION: FUNCTION of this script in a password login of dave's (ssh -n gives it
# no standard input: the secret comes from secrets.env).
dave_session() { ssh_password dave "$PASSWORD_DAVE" bash "$E2E_DIR/packages.sh" "$@"; }
dave_stores() {
    keyring_is unlocked && printf '%s' "$SECRET_LIFECYCLE" | secret-tool store --label=lifecycle service lifecycle account dave
}
dave_reads() {
    keyring_is unlocked && expect_output "$SECRET_LIFECYCLE" secret-tool lookup service lifecycle account dave
}
create_dave() { useradd -m -s /bin/bash dave && printf 'dave:%s\n' "$PASSWORD_DAVE" | chpasswd; }
digest_kept() {
    local now
    now=$(database_digest dave)
    [ -n "$now" ] && [ "$now" = "$(cat /run/e2e-dave-digest)" ] && return 0
    diff <(cat /run/e2e-dave-digest) <(printf '%s\n' "$now")
    echo "dave's keyring files changed (or are gone)"
    return 1
}
removed() {
    local package status bad=""
    for package in $PACKAGES; do
        status=$(dpkg-query -W -f '${Status}' "$package" 2>/dev/null)
        case $status in "" | "unknown ok not-installed" | "deinstall ok config-files") ;; *) bad="$bad $package ($status)" ;; esac
    done
    [ -z "$bad" ] && return 0
    echo "still installed:$bad"
    return 1
}
purged() {
    local package bad=""
    for package in $PACKAGES; do
        dpkg-query -W -f '${Status}' "$package" >/dev/null 2>&1 && bad="$bad $package ($(dpkg-query -W -f '${Status}' "$package"))"
    done
    [ -z "$bad" ] || { echo "dpkg still knows:$bad"; return 1; }
    no_files_left
}
# Nothing of secretd's outside the users' homes: its files, its profile, its unit state.
no_files_left() {
    local left
    left=$(ls -d /usr/bin/secretd /usr/bin/secretctl /usr/share/secretd /usr/lib/systemd/user/secretd.* /usr/lib/*/security/pam_secretd.so \
        /usr/share/pam-configs/secretd /usr/share/xdg-desktop-portal/portals/secretd.portal 2>/dev/null
        find /etc/systemd /var/lib/systemd/deb-systemd-user-helper-enabled /usr/share/dbus-1 -name '*secretd*' 2>/dev/null
        find /usr/share/dbus-1/services /etc/systemd/user -xtype l 2>/dev/null)
    [ -z "$left" ] && return 0
    printf '%s\n' "$left"
    echo "left behind (above)"
    return 1
}

remove() {
    local current alice_login
    current=$(version_of current)
    check "remove: secretctl setup --system again, before the removal" expect_status 0 secretctl setup --system
    check "remove: user dave created with a password" create_dave
    check "remove: dave's first password login creates his login keyring; he stores an item" dave_session dave_stores
    logout_check "remove: dave's first login" dave
    database_digest dave >/run/e2e-dave-digest
    check "remove: apt remove secretd secretctl libpam-secretd" apt_get remove $PACKAGES
    check "remove: the packages are removed" removed
    check "remove: no pam_secretd in /etc/pam.d/common-* (libpam-secretd's prerm)" no_pam_lines
    check "remove: no secretd unit enabled for every user (secretd's prerm undid setup --system)" no_units
    check "remove: gnome-keyring's files are its package's again (dpkg --verify, no diversion, no mask)" gk_restored
    check "remove: gnome-keyring's org.freedesktop.secrets.service is in place again (dpkg -S)" gk_activation_file_kept
    check "remove: dave's password login still works" ssh_password dave "$PASSWORD_DAVE" true
    alice_login=$(alice_login_password)
    check "remove: alice's password login still works" ssh_password alice "${!alice_login}" true
    logout_check "remove: the logins" dave
    logged_out alice >/dev/null
    check "remove: dave's keyring files are untouched" digest_kept
    check "apt purge secretd secretctl libpam-secretd" apt_get purge $PACKAGES
    check "purge: dpkg knows none of the packages; none of their files, profile or unit state is left" purged
    check "purge: dave's keyring files are untouched" digest_kept
    check "purge: no file of another package changed (dpkg --verify)" packages_intact
    check "reinstall: apt install ./… ($current) again" apt_install current
    check "reinstall: nothing switched on by the installation (no pam_secretd in /etc/pam.d)" no_pam_lines
    check "reinstall: secretctl setup --system" expect_status 0 secretctl setup --system
    check "reinstall: dave's password login unlocks his old keyring and finds his item" dave_session dave_reads
    logout_check "reinstall" dave
    check "reinstall: setup --system --undo" expect_status 0 secretctl setup --system --undo
}

# ---- a machine without gnome-keyring (a server): no package has an activation file for
# org.freedesktop.secrets, so setup --system links secretd's in, and --undo takes it out.

ACTIVATION_FILE=/usr/share/dbus-1/services/org.freedesktop.secrets.service
activation_linked() {
    [ "$(readlink "$ACTIVATION_FILE")" = /usr/share/secretd/dbus-1/services/org.freedesktop.secrets.service ] &&
        [ -z "$(dpkg -S "$ACTIVATION_FILE" 2>/dev/null)" ] && return 0
    ls -l "$ACTIVATION_FILE"
    echo "$ACTIVATION_FILE is not an unowned link to secretd's file"
    return 1
}
activation_unlinked() {
    [ ! -e "$ACTIVATION_FILE" ] && [ ! -L "$ACTIVATION_FILE" ] && return 0
    ls -l "$ACTIVATION_FILE"
    echo "$ACTIVATION_FILE is still there"
    return 1
}
without_gnome_keyring() {
    check "without gnome-keyring: apt remove gnome-keyring libpam-gnome-keyring" apt_get remove gnome-keyring libpam-gnome-keyring
    check "without gnome-keyring: secretctl setup --system" expect_status 0 secretctl setup --system
    check "without gnome-keyring: $ACTIVATION_FILE is a link to secretd's (no package's)" activation_linked
    session "without gnome-keyring: activation" key alice activation
    logout_check "without gnome-keyring: activation"
    check "without gnome-keyring: secretctl setup --system --undo" expect_status 0 secretctl setup --system --undo
    check "without gnome-keyring: the link is gone after --undo" activation_unlinked
}

case $1 in
install) install_previous ;;
upgrade) upgrade ;;
remove) remove; without_gnome_keyring ;;
dave_stores | dave_reads) "$1" ;;
*) echo "usage: packages.sh install|upgrade|remove" >&2; exit 2 ;;
esac
