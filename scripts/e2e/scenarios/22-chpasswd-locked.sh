# shellcheck shell=bash
# Root sets alice's password while she is logged in with the keyring locked: it still opens with
# its own password, and as it unlocks secretd re-wraps it under root's. Leaves alice=4.
# boot: second
# needs: users setup-system alice=3

# its password until she unlocks it with that, then it takes root's.
alice_unlocks_with() { printf '%s' "$1" | as_user alice secretctl unlock --password-stdin; }
lock_alice() { as_user alice secretctl lock && expect_status 0 as_user alice bash -c ". $E2E_DIR/lib.sh; keyring_is locked"; }
took_root_password() {
    local _
    for _ in $(seq 50); do
        journalctl --no-pager -o cat _UID="$(id -u alice)" | grep -q 'the login keyring now opens with the login password root set' && return 0
        sleep 0.2
    done
    echo "secretd did not say it re-wrapped the keyring under root's password"
    return 1
}
reset_while_locked() {
    local holder
    ssh_password alice "$PASSWORD_3" bash "$E2E_DIR/session.sh" hold 90 >/tmp/hold.log 2>&1 &
    holder=$!
    check "chpasswd while alice's keyring is locked: her open session has it unlocked" wait_unlocked
    check "chpasswd while alice's keyring is locked: secretctl lock" lock_alice
    check "chpasswd while alice's keyring is locked: root sets her password (chpasswd)" root_sets_password "$PASSWORD_4"
    check "chpasswd while alice's keyring is locked: it still opens with its password (secretctl unlock)" \
        alice_unlocks_with "$PASSWORD_3"
    check "chpasswd while alice's keyring is locked: as it unlocks, secretd re-wraps it under root's (journal)" took_root_password
    logout_check "chpasswd while locked"
    wait "$holder" 2>/dev/null
    session "after chpasswd while locked" password alice "$PASSWORD_4" password_login "after chpasswd while locked"
    logout_check "after chpasswd while locked"
}

scenario() {
    reset_while_locked
    state_set alice 4
}
