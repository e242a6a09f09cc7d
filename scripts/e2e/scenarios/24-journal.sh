# shellcheck shell=bash
# What the logins left in the journal: no insecure-memory warning, quiet logouts, none of the test
# passwords or secrets, the quick check made at the clean stops and skipped at the next start,
# and alice's own journal there (so the searches saw it).
# boot: second
# needs: users setup-system alice

insecure_memory() {
    ! journalctl --no-pager -o cat | grep -i 'insecure memory' && return 0
    echo "the journal has libgcrypt's insecure-memory warning"
    return 1
}
# secretd logs nothing abnormal when logins end: no lost bus (the unit is stopped before the
# session bus), no complaint from a thread started at the stop.
quiet_logouts() {
    local lines
    lines=$(journalctl --no-pager -o cat _COMM=secretd | grep -E 'lost the connection to the session bus|Failed to set thread priority')
    [ -z "$lines" ] && return 0
    printf '%s\n' "$lines" | head -n 5
    return 1
}
no_secrets_logged() {
    local journal name found=""
    journal=$(journalctl --no-pager -o verbose)
    for name in PASSWORD_1 PASSWORD_2 PASSWORD_3 PASSWORD_4 PASSWORD_5 PASSWORD_BOB PASSWORD_CAROL WRONG_PASSWORD \
        SECRET_TOOL SECRET_PYTHON SECRET_GIT SECRET_GK SECRET_PORTAL \
        SECRET_SYNC SECRET_SYNC_2 SECRET_SYNC_BOB SECRET_SYNC_DEVICE SECRET_SYNC_AFTER; do
        printf '%s' "$journal" | grep -F -- "${!name}" && found="$found $name"
    done
    [ -z "$found" ] && return 0
    echo "the journal contains:$found"
    return 1
}
# The quick check a clean stop makes (at logout, through the user unit's stop) spares the next
# start its own: some start of the logins logged the skip, and no stop found its file damaged.
check_at_stop() {
    local lines
    lines=$(journalctl --no-pager -o cat _COMM=secretd)
    if printf '%s\n' "$lines" | grep -F 'fails its quick check as it closes'; then return 1; fi
    printf '%s\n' "$lines" | grep -qF 'passed its quick check at the last clean stop and is unchanged since' && return 0
    echo "no start of secretd skipped the quick check after a clean stop"
    return 1
}
journal_of_user() {
    [ -n "$(journalctl --no-pager -o cat _UID="$(id -u alice)" | head -n 1)" ] && return 0
    echo "no journal line from alice's processes (is the journal persistent?)"
    return 1
}

scenario() {
    check "journal: no 'insecure memory' warning" insecure_memory
    check "journal: secretd stops quietly at logout (no lost bus, no thread warning)" quiet_logouts
    check "journal: none of the test passwords or secrets" no_secrets_logged
    check "journal: a start after a logout skipped the quick check its clean stop had made, and no stop found a damaged file" check_at_stop
    check "journal: alice's user journal is there (so the checks above searched it)" journal_of_user
}
