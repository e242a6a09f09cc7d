# shellcheck shell=bash
# While alice is logged in with a key (keyring locked): a wrong password changes nothing, and
# su - alice from bob's session with her password unlocks her keyring.
# boot: second
# needs: users setup-system alice=1

# alice is logged in with a key (her keyring locked); bob runs su - alice and types her password.
su_while_logged_in() {
    local holder
    ssh_key alice bash "$E2E_DIR/session.sh" hold_locked 90 >/tmp/hold.log 2>&1 &
    holder=$!
    check "su while alice is logged in: her key login's session runs" wait_session
    check "su while alice is logged in: her login keyring is locked before su" \
        expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is locked"
    check "wrong password while alice is logged in (secretd running): the ssh login fails, the files are unchanged" \
        wrong_password
    check "wrong password while alice is logged in: her login keyring is still locked" \
        expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is locked"
    session "su from bob while alice is logged in" password bob "$PASSWORD_BOB" su_from_bob_running
    check "su - alice from bob's session while alice is logged in: her login keyring is unlocked" \
        expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is unlocked"
    logout_check "su while alice is logged in" bob
    logout_check "su while alice is logged in"
    wait "$holder" 2>/dev/null
}

scenario() { su_while_logged_in; }
