# shellcheck shell=bash
# The administrator's secretctl setup --system: PAM lines (pam_secretd after pam_systemd), the
# units enabled for every user, gnome-keyring's units masked, its activation files diverted and its
# autostart entry hidden; a second run changes nothing. Leaves setup --system in force.
# boot: first
# needs: no-setup-system

pam_line() { grep -q '^[^#]*pam_secretd\.so' "/etc/pam.d/common-$1" && return 0; cat "/etc/pam.d/common-$1"; echo "no pam_secretd.so line in /etc/pam.d/common-$1"; return 1; }
session_order() {
    local systemd secretd
    systemd=$(grep -n '^[^#]*pam_systemd\.so' /etc/pam.d/common-session | head -n 1 | cut -d: -f1)
    secretd=$(grep -n '^[^#]*pam_secretd\.so' /etc/pam.d/common-session | head -n 1 | cut -d: -f1)
    [ -n "$systemd" ] && [ -n "$secretd" ] && [ "$secretd" -gt "$systemd" ] && return 0
    cat /etc/pam.d/common-session
    echo "pam_secretd.so (line ${secretd:-none}) is not after pam_systemd.so (line ${systemd:-none})"
    return 1
}
enabled_globally() {
    local found
    found=$(find /etc/systemd/user -path "*.wants/$1" 2>/dev/null)
    [ -n "$found" ] && { echo "$found"; return 0; }
    find /etc/systemd/user 2>/dev/null
    echo "no /etc/systemd/user/*.wants/$1"
    return 1
}
system_state() {
    sha256sum /etc/pam.d/common-* /etc/xdg/autostart/gnome-keyring-secrets.desktop
    find /etc/systemd/user /usr/share/dbus-1/services -printf '%p %l\n' 2>/dev/null | sort
    dpkg-divert --list | sort
}
setup_again() {
    local before after out rc
    before=$(system_state)
    out=$(secretctl setup --system 2>&1)
    rc=$?
    after=$(system_state)
    printf '%s\n' "$out"
    [ $rc -eq 0 ] || { echo "the second secretctl setup --system exited $rc"; return 1; }
    [ "$before" = "$after" ] && return 0
    diff <(printf '%s\n' "$before") <(printf '%s\n' "$after")
    echo "the second run changed the files above"
    return 1
}
system_setup() {
    local out rc name="setup --system exits 0 and says what it changed"
    out=$(secretctl setup --system 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then fail "$name" "exit status $rc" "$out"
    elif [ -z "$out" ]; then fail "$name" "it printed nothing"
    else pass "$name"; fi
    note "secretctl setup --system printed:" "$out"
    check "setup --system: /etc/pam.d/common-auth calls pam_secretd.so" pam_line auth
    check "setup --system: /etc/pam.d/common-password calls pam_secretd.so" pam_line password
    check "setup --system: /etc/pam.d/common-session calls pam_secretd.so after pam_systemd.so" session_order
    check "setup --system: secretd.socket enabled for every user" enabled_globally secretd.socket
    check "setup --system: secretd.service enabled for every user" enabled_globally secretd.service
    check "setup --system: gnome-keyring's units masked for every user" gk_masked
    check "setup --system: gnome-keyring's three D-Bus activation files diverted, linked to secretd's" gk_diverted
    check "setup --system: gnome-keyring's autostart entry hidden" gk_hidden
    check "setup --system run a second time: exits 0, changes nothing" setup_again
}

# ---- gnome-keyring, for every user

GK_FILES="org.freedesktop.secrets org.gnome.keyring org.freedesktop.impl.portal.Secret"
gk_masked() {
    local unit bad=""
    for unit in gnome-keyring-daemon.socket gnome-keyring-daemon.service; do
        [ "$(readlink "/etc/systemd/user/$unit")" = /dev/null ] || bad="$bad $unit"
    done
    [ -z "$bad" ] && return 0
    ls -l /etc/systemd/user
    echo "not masked in /etc/systemd/user:$bad"
    return 1
}
gk_diverted() {
    local name path bad=""
    for name in $GK_FILES; do
        path=/usr/share/dbus-1/services/$name.service
        dpkg-divert --list "$path" | grep -qx "local diversion of $path to $path.gnome-keyring" || bad="$bad $name (no diversion)"
        [ "$(readlink "$path")" = "/usr/share/secretd/dbus-1/services/$name.service" ] || bad="$bad $name (link: $(readlink "$path"))"
        grep -q gnome-keyring-daemon "$path.gnome-keyring" || bad="$bad $name (moved file)"
    done
    [ -z "$bad" ] && return 0
    dpkg-divert --list; ls -l /usr/share/dbus-1/services
    echo "activation files:$bad"
    return 1
}
gk_hidden() {
    grep -qx 'Hidden=true' /etc/xdg/autostart/gnome-keyring-secrets.desktop && return 0
    cat /etc/xdg/autostart/gnome-keyring-secrets.desktop
    echo "no Hidden=true line"
    return 1
}

scenario() { system_setup; }
