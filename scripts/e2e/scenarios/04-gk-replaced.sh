# shellcheck shell=bash
# After setup --system, carol's password login unlocks secretd, which alone claims the Secret
# Service name, and her item imported from gnome-keyring is there.
# boot: first
# needs: carol setup-system

scenario() {
    session "gnome-keyring replaced for everyone" password carol "$PASSWORD_CAROL" gk_replaced
    logout_check "gnome-keyring replaced for everyone" carol
}
