# shellcheck shell=bash
# Root sets alice's password (chpasswd) while she is logged in with the keyring unlocked: the
# next login with the new password unlocks it. Leaves alice=3.
# boot: second
# needs: users setup-system alice=2

# alice stays logged in (her session holds the keyring unlocked) while root sets her password.
reset_while_logged_in() {
    local holder
    ssh_password alice "$PASSWORD_2" bash "$E2E_DIR/session.sh" hold 90 >/tmp/hold.log 2>&1 &
    holder=$!
    check "chpasswd while logged in: alice's open session has the keyring unlocked" wait_unlocked
    check "chpasswd while logged in: root sets alice's password (chpasswd)" root_sets_password "$PASSWORD_3"
    logout_check "chpasswd while logged in"
    wait "$holder" 2>/dev/null
    session "after chpasswd while logged in" password alice "$PASSWORD_3" password_login "after chpasswd while logged in"
    logout_check "after chpasswd while logged in"
}

scenario() {
    reset_while_logged_in
    state_set alice 3
}
