# shellcheck shell=bash
# carol, whose desktop ran gnome-keyring, copies her keyring into secretd and switches herself
# over (secretctl import secret-service, secretctl setup), keeps gnome-keyring off across logins,
# then undoes the switch and has gnome-keyring back, before the administrator acts for everyone.
# Leaves the state carol.
# boot: first
# needs: no-setup-system

gnome_keyring_user() {
    check "user carol created with a password" create_user carol "$PASSWORD_CAROL"
    session "gnome-keyring desktop" password carol "$PASSWORD_CAROL" gk_first
    logout_check "gnome-keyring desktop" carol
    session "switch to secretd" password carol "$PASSWORD_CAROL" gk_switch
    logout_check "switch to secretd" carol
    session "gnome-keyring kept off" password carol "$PASSWORD_CAROL" gk_kept_off
    logout_check "gnome-keyring kept off" carol
    session "undo the switch" password carol "$PASSWORD_CAROL" gk_undo
    logout_check "undo the switch" carol
    session "gnome-keyring back" password carol "$PASSWORD_CAROL" gk_back "gnome-keyring back"
    logout_check "gnome-keyring back" carol
}
create_user() { useradd -m -s /bin/bash "$1" && printf '%s:%s\n' "$1" "$2" | chpasswd; }

scenario() {
    gnome_keyring_user
    state_set carol yes
}
