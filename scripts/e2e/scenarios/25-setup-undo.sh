# shellcheck shell=bash
# secretctl setup --system --undo: no PAM lines, no units, password logins still work, gnome-keyring's
# files are its package's again and it provides the Secret Service for carol again.
# boot: second
# needs: carol setup-system users alice

system_undo() {
    local password
    password=$(alice_password) # her last password
    check "setup --system --undo exits 0" expect_status 0 secretctl setup --system --undo
    check "setup --system --undo: no pam_secretd in /etc/pam.d/common-*" no_pam_lines
    check "setup --system --undo: no secretd unit enabled in /etc/systemd/user" no_units
    check "setup --system --undo: password logins still work" ssh_password alice "${!password}" true
    check "setup --system --undo: gnome-keyring's files are its package's again (dpkg --verify), no diversion, no mask" gk_restored
    session "gnome-keyring back for everyone" password carol "$PASSWORD_CAROL" gk_back "gnome-keyring back for everyone"
    logout_check "gnome-keyring back for everyone" carol
}

scenario() { system_undo; }
