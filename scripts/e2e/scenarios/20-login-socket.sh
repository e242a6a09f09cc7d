# shellcheck shell=bash
# A process of alice's (not root's PAM stack) asking her login socket to set the password
# without the old one is refused, and the keyring keeps its password; the journal names root's
# PAM stack for the logins and the refusal.
# boot: second
# needs: users setup-system alice=2

# secretd's journal says who sent each login socket request: root's PAM stack for the ssh
# logins, and the refusal of alice's own process's reset.
socket_journal() {
    local journal
    journal=$(journalctl --no-pager -o cat _UID="$(id -u alice)" _COMM=secretd)
    printf '%s\n' "$journal" | grep -q "the login socket: UNLOCK from root's PAM stack" ||
        { echo "no UNLOCK from root's PAM stack in alice's secretd journal"; return 1; }
    printf '%s\n' "$journal" | grep -q "refused a login password change without the old password from a process of the user" ||
        { echo "no refusal of the reset in alice's secretd journal"; return 1; }
}


scenario() {
    session "a process of alice's on the login socket" password alice "$PASSWORD_2" socket_reset_refused PASSWORD_2
    logout_check "a process of alice's on the login socket"
    check "journal: the refusal of the reset, and the logins from root's PAM stack" socket_journal
}
