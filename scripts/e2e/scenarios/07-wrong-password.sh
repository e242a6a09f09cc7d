# shellcheck shell=bash
# A login with a wrong password fails and leaves the keyring's files unchanged; the next login
# with the right one unlocks the keyring and finds the items.
# boot: first
# needs: users setup-system alice=1

scenario() {
    check "wrong password: the ssh login fails and the keyring's files are unchanged" wrong_password
    session "second login" password alice "$PASSWORD_1" password_login "second login (after a wrong password)"
    logout_check "second login"
}
