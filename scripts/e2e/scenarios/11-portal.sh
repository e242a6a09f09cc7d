# shellcheck shell=bash
# A Flatpak-style app (bubblewrap, xdg-dbus-proxy) stores and reads a secret through the desktop
# portal, whose key lives in the login keyring hidden from other clients; the app's request starts
# a stopped secretd, and fails at once while the keyring is locked.
# boot: second
# needs: users setup-system alice=1

scenario() {
    session "portal" password alice "$PASSWORD_1" portal_app
    logout_check "portal"
}
