# shellcheck shell=bash
# Root sets alice's password while she is logged out: the new password's login leaves the keyring
# locked, the previous password unlocks it at once. Leaves alice's password PASSWORD_5 and her
# keyring opening with PASSWORD_4: the state alice=split, which no alice=N describes, so a later
# scenario that needs alice starts her afresh (state.sh).
# boot: second
# needs: users setup-system alice=4

scenario() {
    check "chpasswd while logged out: root sets alice's password" root_sets_password "$PASSWORD_5"
    state_set alice 5
    session "after chpasswd while logged out" password alice "$PASSWORD_5" after_root_reset PASSWORD_4
    logout_check "after chpasswd while logged out"
    session "the login after that" password alice "$PASSWORD_5" show_state
    logout_check "the login after that"
    state_set alice split
}
