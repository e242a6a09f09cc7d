# shellcheck shell=bash
# A login with an ssh key (no password) leaves the keyring locked: clients fail at once, and
# secretctl unlock --password-stdin opens it.
# boot: second
# needs: users setup-system alice=1

scenario() {
    session "key login" key alice key_login PASSWORD_1
    logout_check "key login"
}
