# shellcheck shell=bash
# passwd at a terminal (old, new, new) re-wraps the keyring: the new password's login unlocks it,
# the old one no longer logs in. Leaves alice=2.
# boot: second
# needs: users setup-system alice=1

old_password_refused() {
    ssh_password alice "$PASSWORD_1" true && { echo "the old password still logs in"; return 1; }
    return 0
}

scenario() {
    session "passwd" password alice "$PASSWORD_1" run_passwd
    logout_check "passwd"
    state_set alice 2
    session "new password" password alice "$PASSWORD_2" password_login "after passwd, new password"
    logout_check "new password"
    check "after passwd: the old password no longer logs in" old_password_refused
}
