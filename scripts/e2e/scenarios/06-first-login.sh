# shellcheck shell=bash
# alice's first password login creates her login keyring from the password; secret-tool, Python
# keyring and git's helper store items and read them back; a second secretd on the same keyring is
# refused; nothing is enabled per user. Leaves alice=1.
# boot: first
# needs: users setup-system alice=none

scenario() {
    session "first login" password alice "$PASSWORD_1" first_login
    logout_check "first login"
    state_set alice 1
}
